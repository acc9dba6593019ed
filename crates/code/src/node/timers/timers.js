// Node's `timers`: the global timer functions, and `timers/promises`-style `setTimeout` under
// `promises`.
module.exports = {
  setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate,
  promises: {
    setTimeout: (ms, value) => new Promise((resolve) => setTimeout(() => resolve(value), ms)),
    setImmediate: (value) => new Promise((resolve) => setImmediate(() => resolve(value))),
  },
};
