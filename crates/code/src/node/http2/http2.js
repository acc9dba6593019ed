// Node's `http2`: loads (current axios requires it at load), connects nowhere: code's requests
// go through `fetch` and `http(s)`. Connecting or serving throws `EACCES`.
const refuse = (name) => function () {
  const error = new Error(`http2.${name}: code in the vault opens no sockets (use fetch or https)`);
  error.code = 'EACCES';
  throw error;
};
module.exports = {
  connect: refuse('connect'),
  createServer: refuse('createServer'),
  createSecureServer: refuse('createSecureServer'),
  constants: {
    HTTP2_HEADER_STATUS: ':status', HTTP2_HEADER_METHOD: ':method', HTTP2_HEADER_PATH: ':path',
    HTTP2_HEADER_AUTHORITY: ':authority', HTTP2_HEADER_SCHEME: ':scheme',
    HTTP2_HEADER_CONTENT_TYPE: 'content-type', HTTP2_HEADER_CONTENT_LENGTH: 'content-length',
  },
  sensitiveHeaders: Symbol('nodejs.http2.sensitiveHeaders'),
};
