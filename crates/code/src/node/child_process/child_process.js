// Node's `child_process`: loads, starts nothing (the worker's seccomp filter would refuse it
// anyway); every function throws `EACCES`.
const refuse = (name) => function () {
  const error = new Error(`child_process.${name}: code in the vault starts no processes`);
  error.code = 'EACCES';
  throw error;
};
module.exports = {};
for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
  module.exports[name] = refuse(name);
}
