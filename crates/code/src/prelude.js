// The globals tenant code gets (docs/decisions.md §7), defined in every fresh context before the
// call it serves. An ES module, compiled to bytecode once per runtime and loaded from it per
// context. Host functions (__log, __uuid, __setTimer, __clearTimer) and the object `__host`
// are installed before it runs and removed from the global object by it; `run` and `svc` are
// handed to the host on `__host` (not exported: code could `import()` the loaded module).
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
  log: globalThis.__log, uuid: globalThis.__uuid,
  setTimer: globalThis.__setTimer, clearTimer: globalThis.__clearTimer,
});
delete globalThis.__log;
delete globalThis.__uuid;
delete globalThis.__setTimer;
delete globalThis.__clearTimer;
const toHost = globalThis.__host;
delete globalThis.__host;

// Loads the tenant's module with `new Function` (the source is parsed as a function body in the
// global scope, so it cannot close the wrapper early nor see this module) and calls its export.
// Code is stored as given; one that does not compile fails here, marked for the host (a 422
// naming the error and its line, counted from the module's first line).
toHost.run = function run(source, request) {
  const module = { exports: {} };
  let load;
  try {
    load = new Function('module', 'exports', source);
  } catch (e) {
    const name = (e && e.name) || 'SyntaxError';
    const message = (e && e.message) || String(e);
    const at = /:(\d+):\d+/.exec((e && e.stack) || '');
    // `new Function` puts two lines before the source.
    const line = at ? Math.max(1, Number(at[1]) - 2) : null;
    throw { __tokenvault_compile: line === null ? `${name}: ${message}` : `${name}: ${message} (line ${line})` };
  }
  load(module, module.exports);
  const main = module.exports;
  if (typeof main !== 'function') throw new TypeError('module.exports must be a function');
  return main(request);
}

// Builds `req.svc` around the host's blocking call: each method returns a promise of the JSON the
// HTTP API returns, or rejects with an `Error` carrying the problem (`status`, `errors`, `problem`).
toHost.svc = function svc(call) {
  const invoke = (method, args) => new Promise((resolve, reject) => {
    const out = JSON.parse(call(method, JSON.stringify(args)));
    if (Object.prototype.hasOwnProperty.call(out, 'ok')) { resolve(out.ok); return; }
    const problem = out.error || {};
    const error = new Error(problem.detail || problem.title || 'the svc call failed');
    error.status = problem.status;
    error.errors = problem.errors;
    error.problem = problem;
    reject(error);
  });
  return Object.freeze({
    tokens: Object.freeze({
      create: (body) => invoke('tokens.create', [body]),
      retrieve: (id) => invoke('tokens.retrieve', [id]),
      update: (id, patch) => invoke('tokens.update', [id, patch]),
      delete: (id) => invoke('tokens.delete', [id]),
      list: (query) => invoke('tokens.list', [query === undefined ? {} : query]),
    }),
    tokenize: (body) => invoke('tokenize', [body]),
  });
}
