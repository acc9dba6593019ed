// Node's `dgram`: loads (aws-sdk requires it at load), sends nothing; `createSocket` throws
// `EACCES`.
module.exports = {
  createSocket() {
    const error = new Error('dgram.createSocket: code in the vault opens no sockets');
    error.code = 'EACCES';
    throw error;
  },
};
