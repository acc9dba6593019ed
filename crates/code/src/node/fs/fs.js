// Node's `fs`, so that packages requiring it at load (form-data, mime-types' callers) load:
// code in the vault has no file system, and every function throws (or rejects) with `EACCES`.
const denied = (name) => {
  const error = new Error(`EACCES: the vault's code runtime has no file system (fs.${name})`);
  error.code = 'EACCES';
  error.syscall = name;
  return error;
};
const sync = (name) => function () { throw denied(name); };
const NAMES = ['access', 'appendFile', 'chmod', 'chown', 'close', 'copyFile', 'createReadStream',
  'createWriteStream', 'exists', 'fstat', 'lstat', 'mkdir', 'mkdtemp', 'open', 'read', 'readdir',
  'readFile', 'readlink', 'realpath', 'rename', 'rm', 'rmdir', 'stat', 'symlink', 'truncate',
  'unlink', 'utimes', 'watch', 'write', 'writeFile'];
module.exports = { constants: { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1 }, promises: {} };
for (const name of NAMES) {
  module.exports[name] = sync(name);
  module.exports[`${name}Sync`] = sync(`${name}Sync`);
  module.exports.promises[name] = () => Promise.reject(denied(name));
}
module.exports.existsSync = () => false;
module.exports.ReadStream = function ReadStream() { throw denied('ReadStream'); };
module.exports.WriteStream = function WriteStream() { throw denied('WriteStream'); };
module.exports.Stats = function Stats() {};
