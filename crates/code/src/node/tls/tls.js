// Node's `tls`: loads (packages require it beside `net`), connects nowhere: see `net.js`.
const net = require('net');

class TLSSocket extends net.Socket {}
const refuse = (name) => function () {
  const error = new Error(`tls.${name}: code in the vault opens no sockets (use fetch or https)`);
  error.code = 'EACCES';
  throw error;
};
module.exports = {
  TLSSocket,
  connect: refuse('connect'),
  createServer: refuse('createServer'),
  createSecureContext: () => ({}),
  checkServerIdentity: () => undefined,
  rootCertificates: [],
  DEFAULT_MIN_VERSION: 'TLSv1.2',
  DEFAULT_MAX_VERSION: 'TLSv1.3',
  DEFAULT_ECDH_CURVE: 'auto',
};
