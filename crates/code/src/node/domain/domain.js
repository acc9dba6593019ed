// Node's (deprecated) `domain`, as packages that require it at load use it: a domain runs what
// it is given and reports what that throws as its `error` event.
const EventEmitter = require('events');

class Domain extends EventEmitter {
  constructor() { super(); this.members = []; }
  run(fn, ...args) {
    try { return fn(...args); } catch (e) {
      if (this.listenerCount('error') > 0) { this.emit('error', e); return undefined; }
      throw e;
    }
  }
  add(member) { this.members.push(member); }
  remove(member) { this.members = this.members.filter((m) => m !== member); }
  bind(fn) { return (...args) => this.run(fn, ...args); }
  intercept(fn) { return (error, ...args) => (error ? this.emit('error', error) : this.run(fn, ...args)); }
  enter() {}
  exit() {}
  dispose() {}
}
module.exports = { Domain, create: () => new Domain(), createDomain: () => new Domain(), active: null };
