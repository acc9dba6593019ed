// Node's `net`: code in the vault opens no sockets (its requests go through `fetch` and
// `http(s)`). The module loads, as packages that require it at load need (https-proxy-agent,
// @fidm/x509); its address helpers work; connecting or listening throws `EACCES`.
const EventEmitter = require('events');

const refused = (name) => {
  const error = new Error(`net.${name}: code in the vault opens no sockets (use fetch or https)`);
  error.code = 'EACCES';
  return error;
};
const refuse = (name) => function () { throw refused(name); };
const V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const isIPv4 = (input) => V4.test(String(input));
const isIPv6 = (input) => {
  const text = String(input);
  if (!text.includes(':') || /[^0-9a-fA-F:.]/.test(text)) return false;
  try { new URL(`http://[${text}]/`); return true; } catch (_) { return false; }
};
const isIP = (input) => (isIPv4(input) ? 4 : isIPv6(input) ? 6 : 0);

class Socket extends EventEmitter {
  connect() { throw refused('Socket.connect'); }
  setKeepAlive() { return this; }
  setNoDelay() { return this; }
  setTimeout() { return this; }
  ref() { return this; }
  unref() { return this; }
  destroy() { return this; }
  end() { return this; }
}

module.exports = {
  isIP, isIPv4, isIPv6, Socket, Stream: Socket,
  connect: refuse('connect'),
  createConnection: refuse('createConnection'),
  createServer: refuse('createServer'),
  Server: function Server() { throw refused('Server'); },
};
