// The globals tenant code gets (docs/decisions.md §7), defined once per call in a fresh context.
// Host functions (__log, __uuid, __setTimer, __clearTimer) are installed before this runs and
// removed from the global object after it.
(function (host) {
  'use strict';
  const g = globalThis;
  const text = (v) => {
    if (typeof v === 'string') return v;
    try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; } catch (_) { return String(v); }
  };
  const line = (level) => (...args) => host.log(level, args.map(text).join(' '));
  g.console = Object.freeze({
    log: line('info'), info: line('info'), debug: line('debug'),
    warn: line('warn'), error: line('error'), trace: line('debug'),
  });

  const timers = new Map();
  let nextTimer = 1;
  g.setTimeout = function (callback, ms, ...args) {
    if (typeof callback !== 'function') throw new TypeError('setTimeout needs a function');
    const id = nextTimer++;
    timers.set(id, () => callback(...args));
    host.setTimer(id, Math.max(0, Number(ms) || 0));
    return id;
  };
  g.clearTimeout = function (id) {
    if (timers.delete(id)) host.clearTimer(id);
  };
  // Called by the host's event loop when a timer is due.
  Object.defineProperty(g, '__fireTimer', {
    value: (id) => { const f = timers.get(id); timers.delete(id); if (f) f(); },
  });

  g.crypto = Object.freeze({ randomUUID: () => host.uuid() });

  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input = '') {
      const bytes = unescape(encodeURIComponent(String(input)));
      const out = new Uint8Array(bytes.length);
      for (let i = 0; i < bytes.length; i++) out[i] = bytes.charCodeAt(i);
      return out;
    }
  }
  class TextDecoder {
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
  }
  g.TextEncoder = TextEncoder;
  g.TextDecoder = TextDecoder;

  // Error classes: the constructor argument becomes the problem's `errors`.
  const define = (name, status) => {
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
    Object.defineProperty(cls.prototype, '__tokenvault_status', { value: status });
    g[name] = cls;
  };
  define('BadRequestError', 400);
  define('AuthenticationError', 401);
  define('InvalidPaymentMethodError', 402);
  define('AuthorizationError', 403);
  define('InvalidReactorConfigurationError', 400);
  define('RateLimitError', 429);
  define('ReactorRuntimeError', 500);
  define('ServiceUnavailableError', 503);
  g.CustomHttpResponseError = class CustomHttpResponseError extends Error {
    constructor(response) {
      super('custom response');
      this.name = 'CustomHttpResponseError';
      const r = response || {};
      Object.defineProperty(this, '__tokenvault_custom', {
        value: { status: r.status, headers: r.headers || {}, body: r.body === undefined ? null : r.body },
      });
    }
  };
})({
  log: __log, uuid: __uuid, setTimer: __setTimer, clearTimer: __clearTimer,
});
delete globalThis.__log;
delete globalThis.__uuid;
delete globalThis.__setTimer;
delete globalThis.__clearTimer;
