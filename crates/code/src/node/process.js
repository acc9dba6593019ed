// Node's `process`, as tenant code may read it: no environment, no exit, no file system. The
// version is Node.js 16's, the runtime Basis Theory's code was written for.
const start = Date.now();
const hrtime = (previous) => {
  const now = performance.now();
  let seconds = Math.floor(now / 1000);
  let nanos = Math.floor((now % 1000) * 1e6);
  if (Array.isArray(previous)) {
    seconds -= previous[0];
    nanos -= previous[1];
    if (nanos < 0) { seconds -= 1; nanos += 1e9; }
  }
  return [seconds, nanos];
};
hrtime.bigint = () => BigInt(Math.floor(performance.now() * 1e6));
const noop = function () { return this; };
module.exports = {
  env: {},
  argv: ['node'],
  execArgv: [],
  version: 'v16.20.2',
  versions: { node: '16.20.2' },
  release: { name: 'node' },
  platform: 'linux',
  arch: 'x64',
  pid: 1,
  title: 'node',
  browser: false,
  hrtime,
  uptime: () => (Date.now() - start) / 1000,
  nextTick: (callback, ...args) => queueMicrotask(() => callback(...args)),
  cwd: () => '/',
  memoryUsage: () => ({ rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 }),
  emitWarning: () => {},
  exit: (code) => { throw new Error(`process.exit(${code === undefined ? '' : code}) is not available`); },
  on: noop, once: noop, off: noop, addListener: noop, removeListener: noop,
  removeAllListeners: noop, emit: () => false, listeners: () => [],
};
// `Object.prototype.toString.call(process)` is `[object process]` in Node.js; axios picks its
// Node adapter by it.
Object.defineProperty(module.exports, Symbol.toStringTag, { value: 'process' });
