// The globals of docs/decisions.md §7 that the prelude makes on first use (see prelude.js): a
// module of its own, compiled to bytecode once per runtime and loaded into a context only when
// its code first reads one of them. `host` holds the host functions the prelude was given.
export default function globals(host) {
  'use strict';
  const text = (v) => {
    if (typeof v === 'string') return v;
    try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; } catch (_) { return String(v); }
  };

  // Timers: kept by the host, which calls `__fireTimer` when one is due.
  let timers;
  let nextTimer = 1;
  const timerTable = () => timers || (timers = new Map());

  const errorClass = (name, status) => {
    const cls = {
      [name]: class extends Error {
        constructor(arg) {
          const message = typeof arg === 'string' ? arg
            : (arg && typeof arg.message === 'string') ? arg.message : name;
          super(message);
          this.name = name;
          this.status = status;
          if (arg !== undefined) this.errors = arg;
        }
      },
    }[name];
    // Error classes: the constructor argument becomes the problem's `errors`.
    Object.defineProperty(cls.prototype, '__tokenvault_status', { value: status });
    return cls;
  };

  return (name) => {
    switch (name) {
      case 'console': {
        const line = (level) => (...args) => host.log(level, args.map(text).join(' '));
        return Object.freeze({
          log: line('info'), info: line('info'), debug: line('debug'),
          warn: line('warn'), error: line('error'), trace: line('debug'),
        });
      }
      case 'setTimeout':
        return function setTimeout(callback, ms, ...args) {
          if (typeof callback !== 'function') throw new TypeError('setTimeout needs a function');
          const id = nextTimer++;
          timerTable().set(id, () => callback(...args));
          host.setTimer(id, Math.max(0, Number(ms) || 0));
          return id;
        };
      case 'clearTimeout':
        return function clearTimeout(id) {
          if (timerTable().delete(id)) host.clearTimer(id);
        };
      case '__fireTimer':
        return (id) => { const f = timerTable().get(id); timerTable().delete(id); if (f) f(); };
      case 'crypto':
        return Object.freeze({ randomUUID: () => host.uuid() });
      case 'TextEncoder':
        return class TextEncoder {
          get encoding() { return 'utf-8'; }
          encode(input = '') {
            const bytes = unescape(encodeURIComponent(String(input)));
            const out = new Uint8Array(bytes.length);
            for (let i = 0; i < bytes.length; i++) out[i] = bytes.charCodeAt(i);
            return out;
          }
        };
      case 'TextDecoder':
        return class TextDecoder {
          get encoding() { return 'utf-8'; }
          decode(input) {
            if (input === undefined) return '';
            const view = input instanceof Uint8Array ? input
              : ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength)
              : new Uint8Array(input);
            let s = '';
            for (let i = 0; i < view.length; i++) s += String.fromCharCode(view[i]);
            return decodeURIComponent(escape(s));
          }
        };
      case 'BadRequestError': return errorClass(name, 400);
      case 'AuthenticationError': return errorClass(name, 401);
      case 'InvalidPaymentMethodError': return errorClass(name, 402);
      case 'AuthorizationError': return errorClass(name, 403);
      case 'InvalidReactorConfigurationError': return errorClass(name, 400);
      case 'RateLimitError': return errorClass(name, 429);
      case 'ReactorRuntimeError': return errorClass(name, 500);
      case 'ServiceUnavailableError': return errorClass(name, 503);
      case 'CustomHttpResponseError':
        return class CustomHttpResponseError extends Error {
          constructor(response) {
            super('custom response');
            this.name = 'CustomHttpResponseError';
            const r = response || {};
            Object.defineProperty(this, '__tokenvault_custom', {
              value: { status: r.status, headers: r.headers || {}, body: r.body === undefined ? null : r.body },
            });
          }
        };
      default: return undefined;
    }
  };
}
