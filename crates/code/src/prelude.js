// The globals tenant code gets (docs/decisions.md §7), defined in every fresh context before the
// call it serves. An ES module, compiled to bytecode once per runtime and loaded from it per
// context. Host functions (__log, __uuid, __setTimer, __clearTimer, __builtin, __digest,
// __random, __url, __fetch, __cipher, __sign, __verify, __seal, __keyInfo, __modStat, __modText,
// __modLoad) and the object
// `__host` are installed before it runs and removed from the global object by it; `run` and `svc` are handed to the host on `__host` (not exported: code could
// `import()` the loaded module).
const host = {
  log: globalThis.__log, uuid: globalThis.__uuid,
  setTimer: globalThis.__setTimer, clearTimer: globalThis.__clearTimer,
  builtin: globalThis.__builtin,
  digest: globalThis.__digest, random: globalThis.__random, url: globalThis.__url,
  fetch: globalThis.__fetch, cipher: globalThis.__cipher,
  sign: globalThis.__sign, verify: globalThis.__verify,
  seal: globalThis.__seal, keyInfo: globalThis.__keyInfo,
  modStat: globalThis.__modStat, modText: globalThis.__modText, modLoad: globalThis.__modLoad,
  client: globalThis.__client,
  hkdf: globalThis.__hkdf, pbkdf2: globalThis.__pbkdf2,
  ecdhPublic: globalThis.__ecdhPublic, ecdhSecret: globalThis.__ecdhSecret, ecdhPem: globalThis.__ecdhPem,
};
const make = (function (host) {
  'use strict';
  const g = globalThis;

  // The globals are made on first use, not with the context: every call gets a fresh context,
  // and building every class and function up front cost more than the rest of the call. Each
  // listed name starts as an accessor that makes its value the first time it is read and
  // defines it in its place; assigning the name replaces it, as for any global. (A proxy as the
  // global object's prototype would be cheaper, but QuickJS then answers an undeclared name
  // with `undefined` instead of a ReferenceError.)
  // What makes them is a module of its own (`globals.js`), loaded into the context the first
  // time a listed name is read: a call that reads none never pays for reading its bytecode.
  let made;
  const make = (name) => (made || (made = host.builtin('globals')(host)))(name);
  // One function per name serves as both its getter and its setter (called with no argument
  // it is the getter), and one descriptor serves every name: a fresh context pays for one
  // closure per name, not four objects.
  const own = (name, value) => Object.defineProperty(g, name, {
    value, writable: !name.startsWith('__'), configurable: !name.startsWith('__'),
  });
  const accessor = { configurable: true, get: undefined, set: undefined };
  const lazy = (name) => {
    accessor.get = accessor.set = function (value) {
      if (arguments.length === 0) value = make(name);
      own(name, value);
      return value;
    };
    Object.defineProperty(g, name, accessor);
  };
  // V8's `Error.captureStackTrace`, which npm packages call on their own errors: the stack of
  // where it is called.
  Object.defineProperty(Error, 'captureStackTrace', {
    value: function captureStackTrace(target) {
      if (target !== null && typeof target === 'object') {
        Object.defineProperty(target, 'stack', { value: new Error().stack, writable: true, configurable: true });
      }
    },
    writable: true, configurable: true,
  });
  for (const name of ['console', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval',
    'setImmediate', 'clearImmediate', 'crypto', 'Buffer', 'process', 'global',
    'structuredClone', 'URL', 'URLSearchParams', 'fetch', 'Headers', 'Request', 'Response', 'TextEncoder', 'TextDecoder', 'BadRequestError', 'AuthenticationError',
    'InvalidPaymentMethodError', 'AuthorizationError', 'InvalidReactorConfigurationError',
    'InvalidReactorFormulaError', 'RateLimitError', 'ReactorRuntimeError',
    'ServiceUnavailableError', 'CustomHttpResponseError']) {
    lazy(name);
  }
  return make;
})(host);
delete globalThis.__log;
delete globalThis.__uuid;
delete globalThis.__setTimer;
delete globalThis.__clearTimer;
delete globalThis.__builtin;
delete globalThis.__digest;
delete globalThis.__random;
delete globalThis.__url;
delete globalThis.__fetch;
delete globalThis.__cipher;
delete globalThis.__sign;
delete globalThis.__verify;
delete globalThis.__seal;
delete globalThis.__keyInfo;
delete globalThis.__modStat;
delete globalThis.__modText;
delete globalThis.__modLoad;
delete globalThis.__client;
delete globalThis.__hkdf;
delete globalThis.__pbkdf2;
delete globalThis.__ecdhPublic;
delete globalThis.__ecdhSecret;
delete globalThis.__ecdhPem;
const toHost = globalThis.__host;
delete globalThis.__host;

// Loads the tenant's module with `new Function` (the source is parsed as a function body in the
// global scope, so it cannot close the wrapper early nor see this module) and calls its export.
// Code is stored as given; one that does not compile fails here, marked for the host (a 422
// naming the error and its line, counted from the module's first line).
// `require` as a CommonJS module gets it: the built-in modules (docs/decisions.md §7), made by
// the globals module the first time it is called.
const require = function require(name) { return make('__require')(name); };
require.resolve = (name) => make('__require').resolve(name);
require.cache = {};

// Called by the host's event loop when a timer is due (not a global: code cannot replace it).
toHost.fireTimer = (id) => make('__fireTimer')(id);

toHost.run = function run(source, request) {
  const module = { id: '.', filename: '/index.js', exports: {}, loaded: false };
  let load;
  try {
    load = new Function('exports', 'require', 'module', '__filename', '__dirname', source);
  } catch (e) {
    const name = (e && e.name) || 'SyntaxError';
    const message = (e && e.message) || String(e);
    const at = /:(\d+):\d+/.exec((e && e.stack) || '');
    // `new Function` puts two lines before the source.
    const line = at ? Math.max(1, Number(at[1]) - 2) : null;
    throw { __tokenvault_compile: line === null ? `${name}: ${message}` : `${name}: ${message} (line ${line})` };
  }
  load.call(module.exports, module.exports, require, module, '/index.js', '/');
  module.loaded = true;
  const main = module.exports;
  if (typeof main !== 'function') throw new TypeError('module.exports must be a function');
  return main(request);
}

// Builds `req.svc` (also `req.bt`) around the host's blocking call: each method returns a
// promise of the JSON the HTTP API returns, or rejects with an `Error` carrying the problem
// (`status`, `title`, `detail`, `errors`; the whole body as `data` and `problem`, the errors
// also as `details`, as Basis Theory's SDK errors carry them). The fields of a token the
// SDKs spell in camelCase are taken in either spelling.
const CAMEL = {
  fingerprintExpression: 'fingerprint_expression', deduplicateToken: 'deduplicate_token',
  expiresAt: 'expires_at', searchIndexes: 'search_indexes', idempotencyKey: 'idempotency_key',
};
const snakeFields = (o) => {
  if (!o || typeof o !== 'object' || Array.isArray(o)) return o;
  const out = {};
  for (const k of Object.keys(o)) out[Object.prototype.hasOwnProperty.call(CAMEL, k) ? CAMEL[k] : k] = o[k];
  return out;
};
// A tokenize body: token requests (objects with `type` and `data`) anywhere in its shape.
const snakeTokens = (v) => {
  if (Array.isArray(v)) return v.map(snakeTokens);
  if (v && typeof v === 'object') {
    if ('type' in v && 'data' in v) return snakeFields(v);
    const out = {};
    for (const k of Object.keys(v)) out[k] = snakeTokens(v[k]);
    return out;
  }
  return v;
};
// Also what the client packages (`node/bt-clients.js`) build their clients on.
const makeSvc = function svc(call) {
  const invoke = (method, args) => new Promise((resolve, reject) => {
    const out = JSON.parse(call(method, JSON.stringify(args)));
    if (Object.prototype.hasOwnProperty.call(out, 'ok')) { resolve(out.ok); return; }
    const problem = out.error || {};
    const error = new Error(problem.detail || problem.title || 'the svc call failed');
    error.status = problem.status;
    error.title = problem.title;
    error.detail = problem.detail;
    error.errors = problem.errors;
    error.details = problem.errors;
    error.data = problem;
    error.problem = problem;
    reject(error);
  });
  return Object.freeze({
    tokens: Object.freeze({
      create: (body) => invoke('tokens.create', [snakeFields(body)]),
      retrieve: (id) => invoke('tokens.retrieve', [id]),
      update: (id, patch) => invoke('tokens.update', [id, snakeFields(patch)]),
      delete: (id) => invoke('tokens.delete', [id]),
      list: (query) => invoke('tokens.list', [query === undefined ? {} : query]),
    }),
    tokenize: (body) => invoke('tokenize', [snakeTokens(body)]),
    detokenize: (body) => invoke('detokenize', [body]),
  });
}
toHost.svc = makeSvc;
host.makeSvc = makeSvc;
