// Node's `querystring`: parse and stringify from querystring-es3 (MIT; qs-decode.js, qs-encode.js).
exports.decode = exports.parse = require('qs-decode');
exports.encode = exports.stringify = require('qs-encode');
exports.escape = (s) => encodeURIComponent(String(s));
exports.unescape = (s) => {
  try { return decodeURIComponent(String(s).replace(/\+/g, ' ')); } catch (_) { return String(s); }
};
