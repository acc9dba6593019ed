// The globals tenant code gets (docs/decisions.md §7), defined in every fresh context before the
// call it serves. An ES module, compiled to bytecode once per runtime and loaded from it per
// context. The object of the host functions (`__functions`: `builtin`, and once the first
// built-in module loads, which this hands the object to, log, uuid, setTimer, clearTimer, digest,
// random, url, fetch, cipher, sign, verify, seal, keyInfo, modStat, modText, modLoad, client,
// hkdf, pbkdf2, ecdh*) and the object `__host` are put on the global object
// before it runs and taken off it by it; `run` and `svc` are handed
// to the host on `__host` (not exported: code could `import()` the loaded module).
// The host functions, under the names the built-in modules call them by (`host.digest(…)`).
const host = globalThis.__functions;
const make = (function (host) {
  'use strict';
  // The globals made on first use (`lazy.rs`): the host defines each listed name as an
  // accessor that calls `make(name)` the first time it is read. What makes them is a module of
  // its own (`globals.js`), loaded into the context the first time a listed name is read: a call
  // that reads none never pays for reading its bytecode.
  let made;
  const make = (name) => (made || (made = host.builtin('globals', host)(host)))(name);
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
  // V8's `Error.prepareStackTrace`, which packages (`depd`, `callsites`) set to read a stack's
  // frames: passed on, with call sites that name no function and no `this`, as V8 gives for
  // strict code. QuickJS's own call sites hand out each frame's function — the prelude's,
  // the built-in modules' and the host's among them — so they never reach tenant code. Read
  // through what is captured here: by the time a stack is made, code may have replaced any
  // prototype's method.
  const native = Object.getOwnPropertyDescriptor(Error, 'prepareStackTrace');
  const apply = Reflect.apply;
  const freeze = Object.freeze;
  let prepare;
  // What the engine calls instead of `prepare`, made the first time code sets one (most calls
  // never do: nothing of it is made in their context).
  let prepared;
  const wrapper = () => {
    const none = () => undefined;
    const site = (raw) => {
      const file = raw.getFileName();
      const line = raw.getLineNumber();
      const column = raw.getColumnNumber();
      const name = raw.getFunctionName();
      const isNative = raw.isNative();
      const isConstructor = raw.isConstructor();
      return freeze({
        getFileName: () => file, getLineNumber: () => line, getColumnNumber: () => column,
        getFunctionName: () => name, isNative: () => isNative, isConstructor: () => isConstructor,
        getFunction: none, getThis: none, getTypeName: () => null, getMethodName: () => null,
        isToplevel: () => false, isEval: () => false,
        toString: () => `${name || '<anonymous>'} (${isNative ? 'native' : `${file}:${line}:${column}`})`,
      });
    };
    return function (error, raw) {
      const sites = [];
      for (let i = 0; i < raw.length; i += 1) sites[sites.length] = site(raw[i]);
      return apply(prepare, Error, [error, freeze(sites)]);
    };
  };
  Object.defineProperty(Error, 'prepareStackTrace', {
    get() { return prepare; },
    set(value) {
      prepare = value;
      const calls = typeof value === 'function' ? (prepared || (prepared = wrapper())) : undefined;
      apply(native.set, Error, [calls]);
    },
    configurable: true,
  });
  return make;
})(host);
delete globalThis.__functions;
const toHost = globalThis.__host;
delete globalThis.__host;

// Calls the tenant's module, which the host compiled as `new Function('exports', 'require',
// 'module', '__filename', '__dirname', source)` would (`script.rs`: the source is parsed as a
// function body in the global scope, and cannot see this module), and then its export.
// `require` as a CommonJS module gets it: the built-in modules (docs/decisions.md §7), made by
// the globals module the first time it is called.
const require = function require(name) { return make('__require')(name); };
require.resolve = (name) => make('__require').resolve(name);
require.cache = {};

// Called by the host's event loop when a timer is due (not a global: code cannot replace it).
toHost.fireTimer = (id) => make('__fireTimer')(id);
// What the lazy globals call (`lazy.rs`).
toHost.make = make;

toHost.run = function run(load, request) {
  const module = { id: '.', filename: '/index.js', exports: {}, loaded: false };
  load.call(module.exports, module.exports, require, module, '/index.js', '/');
  module.loaded = true;
  const main = module.exports;
  if (typeof main !== 'function') throw new TypeError('module.exports must be a function');
  return main(request);
}

// `req.svc` (also `req.bt`), and what the client packages (`node/bt-clients/bt-clients.js`) build their
// clients on: made by a module of its own (`svc.js`), loaded into the context the first time a
// call needs a client.
let svcModule;
const makeSvc = (call) => (svcModule || (svcModule = host.builtin('svc', host)()))(call);
toHost.svc = makeSvc;
host.makeSvc = makeSvc;
