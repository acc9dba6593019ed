// The globals of docs/decisions.md §7 that the prelude makes on first use (see prelude.js), and
// `require`: a module of its own, compiled to bytecode once per runtime and loaded into a
// context only when its code first reads one of them. `host` holds the host functions the
// prelude was given.
export default function globals(host) {
  'use strict';
  const g = globalThis;
  const text = (v) => {
    if (typeof v === 'string') return v;
    try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; } catch (_) { return String(v); }
  };

  // Timers: kept by the host, which calls `__fireTimer` when one is due. An interval is a timer
  // set again each time it fires; an immediate is a timer of 0 ms.
  const timers = new Map();
  let nextTimer = 1;
  const setTimer = (callback, ms, args, repeat) => {
    if (typeof callback !== 'function') throw new TypeError('The "callback" argument must be of type function');
    const id = nextTimer++;
    const delay = Math.max(0, Number(ms) || 0);
    timers.set(id, () => {
      if (repeat) host.setTimer(id, Math.max(1, delay)); else timers.delete(id);
      callback(...args);
    });
    host.setTimer(id, delay);
    return id;
  };
  const clearTimer = (id) => {
    if (timers.delete(id)) host.clearTimer(id);
  };

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
  const ERRORS = {
    BadRequestError: 400,
    AuthenticationError: 401,
    InvalidPaymentMethodError: 402,
    AuthorizationError: 403,
    InvalidReactorConfigurationError: 400,
    InvalidReactorFormulaError: 422,
    RateLimitError: 429,
    ReactorRuntimeError: 500,
    ServiceUnavailableError: 503,
  };

  // Built-in modules, by the name `require` takes (with or without `node:`); the modules they
  // require among themselves by theirs. Each is compiled once per worker and loaded into a
  // context the first time it is required there.
  const PUBLIC = ['assert', 'buffer', 'child_process', 'constants', 'crypto', 'dgram', 'dns',
    'domain', 'events', 'fs', 'http', 'http2', 'https', 'net', 'os', 'path', 'process', 'punycode', 'querystring', 'stream',
    'string_decoder', 'timers', 'tls', 'tty', 'url', 'util', 'zlib', 'assert/strict',
    'path/posix'];
  const INTERNAL = ['base64-js', 'ieee754', 'qs-decode', 'qs-encode', 'fetch', 'http-core',
    'bt-clients'];
  // Basis Theory's client packages, provided by the vault (`bt-clients/bt-clients.js`).
  const CLIENTS = {
    '@basis-theory/basis-theory-js': 'basisTheoryJs',
    '@basis-theory/node-sdk': 'nodeSdk',
    '@basis-theory/node-sdk-1.5': 'nodeSdk',
    '@basis-theory/node-sdk-2': 'nodeSdk',
  };
  const ALIASES = { 'safe-buffer': 'buffer', 'assert/strict': 'assert', 'path/posix': 'path' };
  // npm packages the built-ins stand on, vendored under `/.tokenvault/node_modules`.
  const VENDORED = ['readable-stream'];
  const SDK = '@basis-theory/basis-theory-reactor-formulas-sdk-js';
  const modules = new Map();
  const notFound = (name) => {
    const error = new Error(`Cannot find module '${name}'`);
    error.code = 'MODULE_NOT_FOUND';
    return error;
  };
  const load = (name, internal) => {
    if (typeof name !== 'string') {
      throw new TypeError('The "id" argument must be of type string');
    }
    let id = name.startsWith('node:') ? name.slice(5) : name;
    if (internal && VENDORED.includes(id)) return loadFile(resolve('/.tokenvault', id), null);
    if (ALIASES[id]) id = ALIASES[id];
    if (Object.prototype.hasOwnProperty.call(CLIENTS, id)) return load('bt-clients', true)[CLIENTS[id]];
    if (id !== SDK && !PUBLIC.includes(id) && !(internal && INTERNAL.includes(id))) throw notFound(name);
    const found = modules.get(id);
    if (found) return found.exports;
    if (id === 'http' || id === 'https') {
      const exports = load('http-core', true).make(`${id}:`);
      modules.set(id, { exports });
      return exports;
    }
    if (id === SDK) {
      const exports = {};
      for (const cls of [...Object.keys(ERRORS), 'CustomHttpResponseError']) exports[cls] = make(cls);
      modules.set(id, { exports });
      return exports;
    }
    const module = { id, exports: {}, loaded: false };
    modules.set(id, module);
    try {
      host.builtin(id)(module.exports, (n) => load(n, true), module, host);
    } catch (e) {
      modules.delete(id);
      throw e;
    }
    module.loaded = true;
    return module.exports;
  };
  const core = (name) => {
    const id = name.startsWith('node:') ? name.slice(5) : name;
    return id === SDK || PUBLIC.includes(id) || Object.prototype.hasOwnProperty.call(CLIENTS, id) ? id : null;
  };

  // The operator's npm packages (`TOKENVAULT_CODE_MODULES`, docs/decisions.md §7): Node's
  // resolution (relative paths, `node_modules` folders up from the requiring file, a package's
  // `exports` with the conditions node/require/default, `main`, `index.js`, `.js`/`.json`/`.cjs`)
  // over the files the worker was given, all under `/node_modules`. Each file's function is
  // loaded into this context on its first `require` and cached here, cycles as in Node.
  const cache = Object.create(null);
  const stat = (path) => host.modStat(path);
  const normalize = (path) => {
    const out = [];
    for (const part of path.split('/')) {
      if (part === '' || part === '.') continue;
      if (part === '..') out.pop(); else out.push(part);
    }
    return `/${out.join('/')}`;
  };
  const dirOf = (path) => {
    const at = path.lastIndexOf('/');
    return at <= 0 ? '/' : path.slice(0, at);
  };
  const asFile = (path) => {
    for (const ext of ['', '.js', '.json', '.cjs']) if (stat(path + ext) === 1) return path + ext;
    return null;
  };
  const asIndex = (path) => {
    for (const file of ['/index.js', '/index.json', '/index.cjs']) if (stat(path + file) === 1) return path + file;
    return null;
  };
  const packageJson = (dir) => {
    const path = `${dir}/package.json`;
    if (stat(path) !== 1) return null;
    try {
      return JSON.parse(host.modText(path));
    } catch (e) {
      const error = new Error(`Invalid package config ${path}: ${e.message}`);
      error.code = 'ERR_INVALID_PACKAGE_CONFIG';
      throw error;
    }
  };
  const asDir = (path) => {
    const pkg = packageJson(path);
    if (pkg && typeof pkg.main === 'string' && pkg.main !== '') {
      const main = normalize(`${path}/${pkg.main}`);
      const found = asFile(main) || asIndex(main);
      if (found) return found;
    }
    return asIndex(path);
  };
  const CONDITIONS = ['node', 'require', 'default'];
  const pick = (target) => {
    if (typeof target === 'string') return target;
    if (Array.isArray(target)) {
      for (const t of target) { const found = pick(t); if (found) return found; }
      return null;
    }
    if (target && typeof target === 'object') {
      for (const key of Object.keys(target)) {
        if (CONDITIONS.includes(key)) { const found = pick(target[key]); if (found) return found; }
      }
    }
    return null;
  };
  const exported = (exports, sub) => {
    const keys = exports && typeof exports === 'object' && !Array.isArray(exports) ? Object.keys(exports) : [];
    if (!keys.some((k) => k.startsWith('.'))) return sub === '.' ? pick(exports) : null;
    if (Object.prototype.hasOwnProperty.call(exports, sub)) return pick(exports[sub]);
    for (const key of keys) {
      const star = key.indexOf('*');
      if (star >= 0) {
        const head = key.slice(0, star);
        const tail = key.slice(star + 1);
        if (sub.startsWith(head) && sub.endsWith(tail) && sub.length >= key.length - 1) {
          const target = pick(exports[key]);
          return target && target.split('*').join(sub.slice(head.length, sub.length - tail.length));
        }
      } else if (key.endsWith('/') && sub.startsWith(key)) {
        const target = pick(exports[key]);
        return target && target + sub.slice(key.length);
      }
    }
    return null;
  };
  const inPackages = (dir, request) => {
    const parts = request.split('/');
    const length = request.startsWith('@') ? 2 : 1;
    const name = parts.slice(0, length).join('/');
    const sub = parts.slice(length).join('/');
    for (let d = dir; ; d = dirOf(d)) {
      if (!d.endsWith('/node_modules')) {
        const base = `${d === '/' ? '' : d}/node_modules/${name}`;
        if (stat(base) === 2) {
          const pkg = packageJson(base);
          if (pkg && pkg.exports !== undefined && pkg.exports !== null) {
            const target = exported(pkg.exports, sub ? `./${sub}` : '.');
            const file = typeof target === 'string' && target.startsWith('./') ? normalize(`${base}/${target}`) : null;
            if (file && file.startsWith(`${base}/`) && stat(file) === 1) return file;
            const error = new Error(`Package subpath '${sub ? `./${sub}` : '.'}' is not defined by "exports" in ${base}/package.json`);
            error.code = 'ERR_PACKAGE_PATH_NOT_EXPORTED';
            throw error;
          }
          const path = sub ? normalize(`${base}/${sub}`) : base;
          const found = (sub && asFile(path)) || asDir(path);
          if (found) return found;
        }
      }
      if (d === '/') return null;
    }
  };
  const resolve = (dir, request) => {
    const relative = request === '.' || request === '..' || request.startsWith('./')
      || request.startsWith('../') || request.startsWith('/');
    const found = relative
      ? (() => { const path = normalize(request.startsWith('/') ? request : `${dir}/${request}`); return asFile(path) || asDir(path); })()
      : inPackages(dir, request);
    if (!found) throw notFound(request);
    return found;
  };
  const loadFile = (path, parent) => {
    const cached = cache[path];
    if (cached) return cached.exports;
    const module = { id: path, filename: path, path: dirOf(path), exports: {}, loaded: false,
      parent, children: [], paths: [] };
    if (parent) parent.children.push(module);
    cache[path] = module;
    try {
      if (path.endsWith('.json')) {
        module.exports = JSON.parse(host.modText(path));
      } else {
        const wrapper = host.modLoad(path);
        module.require = requireFrom(module.path, module);
        wrapper.call(module.exports, module.exports, module.require, module, path, module.path);
      }
    } catch (e) {
      delete cache[path];
      throw e;
    }
    module.loaded = true;
    return module.exports;
  };
  const requireFrom = (dir, parent) => {
    const require = function require(name) {
      if (typeof name !== 'string') throw new TypeError('The "id" argument must be of type string');
      if (core(name)) return load(name, false);
      return loadFile(resolve(dir, name), parent);
    };
    require.resolve = (name) => core(name) || resolve(dir, name);
    require.cache = cache;
    return require;
  };
  const require = requireFrom('/', null);

  const made = new Map();
  const make = (name) => {
    if (made.has(name)) return made.get(name);
    const value = build(name);
    made.set(name, value);
    return value;
  };
  const build = (name) => {
    if (Object.prototype.hasOwnProperty.call(ERRORS, name)) return errorClass(name, ERRORS[name]);
    switch (name) {
      case '__require': return require;
      case 'console': {
        const line = (level) => (...args) => host.log(level, args.map(text).join(' '));
        return Object.freeze({
          log: line('info'), info: line('info'), debug: line('debug'),
          warn: line('warn'), error: line('error'), trace: line('debug'),
        });
      }
      case 'setTimeout': return function setTimeout(callback, ms, ...args) { return setTimer(callback, ms, args, false); };
      case 'setInterval': return function setInterval(callback, ms, ...args) { return setTimer(callback, ms, args, true); };
      case 'setImmediate': return function setImmediate(callback, ...args) { return setTimer(callback, 0, args, false); };
      case 'clearTimeout': return function clearTimeout(id) { clearTimer(id); };
      case 'clearInterval': return function clearInterval(id) { clearTimer(id); };
      case 'clearImmediate': return function clearImmediate(id) { clearTimer(id); };
      case '__fireTimer':
        return (id) => { const f = timers.get(id); if (f) f(); };
      case 'crypto':
        return Object.freeze({
          randomUUID: () => host.uuid(),
          getRandomValues: (array) => require('crypto').getRandomValues(array),
        });
      case 'Buffer': return require('buffer').Buffer;
      case 'process': return require('process');
      case 'global': return g;
      case 'fetch': return load('fetch', true).fetch;
      case 'Headers': return load('fetch', true).Headers;
      case 'Request': return load('fetch', true).Request;
      case 'Response': return load('fetch', true).Response;
      case 'URL': return require('url').URL;
      case 'URLSearchParams': return require('url').URLSearchParams;
      case 'structuredClone':
        return function structuredClone(value) {
          const seen = new Map();
          const clone = (v) => {
            if (typeof v === 'function' || typeof v === 'symbol') {
              throw new Error(`${String(v)} could not be cloned.`);
            }
            if (v === null || typeof v !== 'object') return v;
            if (seen.has(v)) return seen.get(v);
            let out;
            if (v instanceof Date) out = new Date(v.getTime());
            else if (v instanceof RegExp) out = new RegExp(v.source, v.flags);
            else if (v instanceof ArrayBuffer) out = v.slice(0);
            else if (ArrayBuffer.isView(v)) out = new v.constructor(v);
            else if (v instanceof Map) { out = new Map(); seen.set(v, out); v.forEach((x, k) => out.set(clone(k), clone(x))); return out; }
            else if (v instanceof Set) { out = new Set(); seen.set(v, out); v.forEach((x) => out.add(clone(x))); return out; }
            else if (Array.isArray(v)) { out = []; seen.set(v, out); v.forEach((x, i) => { out[i] = clone(x); }); return out; }
            else if (v instanceof Error) { out = new Error(v.message); out.name = v.name; }
            else {
              out = {};
              seen.set(v, out);
              for (const k of Object.keys(v)) out[k] = clone(v[k]);
              return out;
            }
            seen.set(v, out);
            return out;
          };
          return clone(value);
        };
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
        // UTF-8 (the default), UTF-16LE and Latin-1 (`latin1`, `iso-8859-1`, `ascii`; WHATWG
        // maps these to windows-1252, which differs only in 0x80–0x9F).
        return class TextDecoder {
          constructor(label = 'utf-8', options = {}) {
            const name = String(label).trim().toLowerCase();
            const known = { 'utf-8': 'utf-8', utf8: 'utf-8', 'unicode-1-1-utf-8': 'utf-8',
              'utf-16le': 'utf-16le', 'utf-16': 'utf-16le', latin1: 'windows-1252',
              'iso-8859-1': 'windows-1252', ascii: 'windows-1252', 'us-ascii': 'windows-1252',
              'windows-1252': 'windows-1252' }[name];
            if (!known) throw new RangeError(`The "${label}" encoding is not supported`);
            this._encoding = known;
            this._fatal = Boolean(options && options.fatal);
          }
          get encoding() { return this._encoding; }
          get fatal() { return this._fatal; }
          decode(input) {
            if (input === undefined) return '';
            const view = input instanceof Uint8Array ? input
              : ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength)
              : new Uint8Array(input);
            let s = '';
            if (this._encoding === 'utf-16le') {
              for (let i = 0; i + 1 < view.length; i += 2) s += String.fromCharCode(view[i] | (view[i + 1] << 8));
              return s;
            }
            for (let i = 0; i < view.length; i++) s += String.fromCharCode(view[i]);
            if (this._encoding === 'windows-1252') return s;
            try {
              return decodeURIComponent(escape(s));
            } catch (e) {
              if (this._fatal) throw new TypeError('The encoded data was not valid for encoding utf-8');
              return require('buffer').Buffer.from(view).toString('utf8');
            }
          }
        };
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
  return make;
}
