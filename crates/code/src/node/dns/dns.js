// Node's `dns`: loads, resolves nothing (the vault's outbound client resolves and checks each
// destination itself); every lookup fails with `EACCES`, by callback or rejected promise.
const refused = (name) => {
  const error = new Error(`dns.${name}: code in the vault resolves no names (fetch and https do)`);
  error.code = 'EACCES';
  error.syscall = name;
  return error;
};
const NAMES = ['lookup', 'lookupService', 'resolve', 'resolve4', 'resolve6', 'resolveAny',
  'resolveCname', 'resolveMx', 'resolveNs', 'resolveSrv', 'resolveTxt', 'reverse'];
const promises = {};
module.exports = { promises };
for (const name of NAMES) {
  module.exports[name] = (...args) => {
    const callback = args[args.length - 1];
    if (typeof callback !== 'function') throw refused(name);
    queueMicrotask(() => callback(refused(name)));
  };
  promises[name] = () => Promise.reject(refused(name));
}
module.exports.setServers = () => {};
module.exports.getServers = () => [];
