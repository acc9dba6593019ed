// Node's `http` and `https` clients (`request`, `get`) over the host's guarded fetch: the
// request is sent when `end()` is called, and the answer is a readable stream of the whole
// body. No server: `createServer` throws. `module.exports` is made per protocol by
// `make(protocol)`, which `http.js` and `https.js` callers reach through the loader.
const EventEmitter = require('events');
const { Readable } = require('stream');
const { Buffer } = require('buffer');
const fetchModule = require('fetch');

const STATUS = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 301: 'Moved Permanently',
  302: 'Found', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 409: 'Conflict', 422: 'Unprocessable Entity', 429: 'Too Many Requests',
  500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};

// The answer: a readable stream (Node's `stream.Readable`) of the whole body, read once it
// has arrived.
class IncomingMessage extends Readable {
  constructor(response, body) {
    super();
    this.statusCode = response.status;
    this.statusMessage = STATUS[response.status] || '';
    this.headers = {};
    this.rawHeaders = [];
    response.headers.forEach((v, k) => { this.headers[k] = v; this.rawHeaders.push(k, v); });
    this.httpVersion = '1.1';
    this.httpVersionMajor = 1;
    this.httpVersionMinor = 1;
    this.trailers = {};
    this.complete = false;
    this.aborted = false;
    this._pending = body;
    this.once('end', () => { this.complete = true; });
  }
  _read() {
    const body = this._pending;
    if (body === null) return;
    this._pending = null;
    if (body.length > 0) this.push(body);
    this.push(null);
  }
  setTimeout() { return this; }
}

// What `socket` listeners get: the connection is the host's, so only its settings are there
// (`net`'s Socket, which connects nowhere).
const { Socket } = require('net');

class ClientRequest extends EventEmitter {
  constructor(url, options, callback) {
    super();
    this._url = url;
    this.method = String(options.method || 'GET').toUpperCase();
    this._headers = {};
    for (const [k, v] of Object.entries(options.headers || {})) this._headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
    this._chunks = [];
    this._ended = false;
    this._aborted = false;
    this.path = url.pathname + url.search;
    this.host = url.hostname;
    this.protocol = url.protocol;
    if (typeof callback === 'function') this.once('response', callback);
    // The connection is the host's: `socket` comes at once, as Node's does once connected,
    // for clients that wait for it before they write (stripe).
    this.socket = new Socket();
    queueMicrotask(() => this.emit('socket', this.socket));
  }
  setHeader(name, value) { this._headers[String(name).toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value); return this; }
  getHeader(name) { return this._headers[String(name).toLowerCase()]; }
  removeHeader(name) { delete this._headers[String(name).toLowerCase()]; }
  getHeaders() { return { ...this._headers }; }
  setTimeout(ms, callback) { if (typeof callback === 'function') this.once('timeout', callback); return this; }
  setNoDelay() { return this; }
  setSocketKeepAlive() { return this; }
  flushHeaders() {}
  write(chunk, encoding, callback) {
    if (typeof encoding === 'function') { callback = encoding; encoding = undefined; }
    this._chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding || 'utf8') : Buffer.from(chunk));
    if (typeof callback === 'function') queueMicrotask(callback);
    return true;
  }
  abort() { this.destroy(); }
  destroy(error) {
    if (this._aborted) return this;
    this._aborted = true;
    queueMicrotask(() => { if (error) this.emit('error', error); this.emit('close'); });
    return this;
  }
  end(chunk, encoding, callback) {
    if (typeof chunk === 'function') { callback = chunk; chunk = undefined; }
    if (typeof encoding === 'function') { callback = encoding; encoding = undefined; }
    if (chunk !== undefined && chunk !== null) this.write(chunk, encoding);
    if (this._ended) return this;
    this._ended = true;
    const body = Buffer.concat(this._chunks);
    const init = { method: this.method, headers: this._headers };
    if (body.length > 0 && this.method !== 'GET' && this.method !== 'HEAD') init.body = body;
    fetchModule.fetch(this._url.href, init).then(
      (response) => response.arrayBuffer().then((bytes) => {
        if (this._aborted) return;
        const message = new IncomingMessage(response, Buffer.from(bytes));
        message.req = this;
        message.socket = this.socket;
        this.res = message;
        this.emit('response', message);
      }),
      (error) => {
        if (this._aborted) return;
        const e = new Error(error.message);
        e.code = 'ECONNREFUSED';
        this.emit('error', e);
      },
    ).finally(() => { if (typeof callback === 'function') callback(); });
    return this;
  }
}

// `request(url[, options][, callback])` and `request(options[, callback])`, as Node reads them.
const make = (defaultProtocol) => {
  const URLClass = require('url').URL;
  const request = (input, options, callback) => {
    if (typeof options === 'function') { callback = options; options = {}; }
    let url;
    if (typeof input === 'string' || input instanceof URLClass) {
      url = new URLClass(String(input));
      options = options || {};
    } else {
      options = input || {};
      const protocol = options.protocol || defaultProtocol;
      const hostname = options.hostname || (options.host || 'localhost').replace(/:\d+$/, '');
      const port = options.port ? `:${options.port}` : '';
      url = new URLClass(`${protocol}//${hostname.includes(':') ? `[${hostname}]` : hostname}${port}${options.path || '/'}`);
    }
    if (options.auth && !(options.headers && (options.headers.authorization || options.headers.Authorization))) {
      options = { ...options, headers: { ...(options.headers || {}), authorization: `Basic ${Buffer.from(options.auth).toString('base64')}` } };
    }
    return new ClientRequest(url, options, callback);
  };
  const get = (input, options, callback) => {
    const req = request(input, options, callback);
    req.end();
    return req;
  };
  class Agent { constructor(options) { this.options = options || {}; } destroy() {} }
  return {
    request,
    get,
    Agent,
    globalAgent: new Agent(),
    ClientRequest,
    IncomingMessage,
    STATUS_CODES: { ...STATUS },
    METHODS: ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'],
    createServer: () => { throw new Error('http.createServer is not available: code cannot listen'); },
  };
};

module.exports = { make };
