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
// Standard streams that go nowhere (console is the log), as packages read them at load
// (`debug`, bluebird): no terminal, writes accepted and dropped.
const stream = (fd) => ({
  fd, isTTY: false, writable: true, columns: 80,
  write: (chunk, encoding, callback) => {
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') queueMicrotask(done);
    return true;
  },
  end() {}, on: noop, once: noop, off: noop, removeListener: noop, emit: () => false,
  getColorDepth: () => 1, hasColors: () => false,
});
module.exports.stdout = stream(1);
module.exports.stderr = stream(2);
module.exports.stdin = { fd: 0, isTTY: false, on: noop, once: noop, removeListener: noop, resume: noop, pause: noop };
module.exports.umask = () => 0o22;
module.exports.config = { variables: {} };
// `Object.prototype.toString.call(process)` is `[object process]` in Node.js; axios picks its
// Node adapter by it.
Object.defineProperty(module.exports, Symbol.toStringTag, { value: 'process' });
