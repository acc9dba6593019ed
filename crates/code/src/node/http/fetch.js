// `fetch`, `Headers`, `Request` and `Response` as Node.js 18 and browsers have them, over the
// host's outbound call (`host.fetch`): the vault's guarded client sends the request, under the
// proxies' destination policy, at most 10 requests a call, within the call's deadline.
const bytesToBase64 = (bytes) => {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
};
const base64ToBytes = (text) => {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
};
const utf8 = (text) => new TextEncoder().encode(text);

class Headers {
  constructor(init) {
    this._map = new Map();
    if (init instanceof Headers) init.forEach((v, k) => this.append(k, v));
    else if (Array.isArray(init)) init.forEach(([k, v]) => this.append(k, v));
    else if (init && typeof init === 'object') Object.keys(init).forEach((k) => this.append(k, init[k]));
  }
  append(name, value) {
    const k = String(name).toLowerCase();
    const v = String(value);
    this._map.set(k, this._map.has(k) ? `${this._map.get(k)}, ${v}` : v);
  }
  set(name, value) { this._map.set(String(name).toLowerCase(), String(value)); }
  get(name) { const v = this._map.get(String(name).toLowerCase()); return v === undefined ? null : v; }
  has(name) { return this._map.has(String(name).toLowerCase()); }
  delete(name) { this._map.delete(String(name).toLowerCase()); }
  forEach(callback, thisArg) { for (const [k, v] of this._map) callback.call(thisArg, v, k, this); }
  keys() { return this._map.keys(); }
  values() { return this._map.values(); }
  entries() { return this._map.entries(); }
  [Symbol.iterator]() { return this._map.entries(); }
  raw() { const o = {}; for (const [k, v] of this._map) o[k] = [v]; return o; }
}

// What a body given to `fetch` or `Response` is, as bytes and the content type it implies.
const bodyOf = (body) => {
  if (body === undefined || body === null) return { bytes: new Uint8Array(0), type: null };
  if (typeof body === 'string') return { bytes: utf8(body), type: 'text/plain;charset=UTF-8' };
  if (body instanceof ArrayBuffer) return { bytes: new Uint8Array(body), type: null };
  if (ArrayBuffer.isView(body)) return { bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength), type: null };
  if (typeof body === 'object' && body.constructor && body.constructor.name === 'URLSearchParams') {
    return { bytes: utf8(body.toString()), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
  }
  return { bytes: utf8(String(body)), type: 'text/plain;charset=UTF-8' };
};

class Body {
  _consume() {
    if (this.bodyUsed) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
    this.bodyUsed = true;
    return Promise.resolve(this._bytes);
  }
  text() { return this._consume().then((b) => new TextDecoder().decode(b)); }
  json() { return this.text().then((t) => JSON.parse(t)); }
  arrayBuffer() { return this._consume().then((b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)); }
  buffer() { return this._consume().then((b) => require('buffer').Buffer.from(b)); }
}

class Request extends Body {
  constructor(input, init = {}) {
    super();
    const from = input instanceof Request ? input : null;
    this.url = from ? from.url : new (require('url').URL)(String(input)).href;
    this.method = String(init.method || (from ? from.method : 'GET')).toUpperCase();
    this.headers = new Headers(init.headers || (from ? from.headers : undefined));
    const { bytes, type } = init.body !== undefined ? bodyOf(init.body) : { bytes: from ? from._bytes : new Uint8Array(0), type: null };
    if (type && !this.headers.has('content-type')) this.headers.set('content-type', type);
    this._bytes = bytes;
    this.bodyUsed = false;
    this.redirect = init.redirect || 'manual';
    this.signal = init.signal || null;
  }
  clone() { return new Request(this); }
}

class Response extends Body {
  constructor(body, init = {}) {
    super();
    const { bytes, type } = bodyOf(body);
    this._bytes = bytes;
    this.status = init.status === undefined ? 200 : init.status;
    this.statusText = init.statusText || '';
    this.headers = new Headers(init.headers);
    if (type && !this.headers.has('content-type')) this.headers.set('content-type', type);
    this.ok = this.status >= 200 && this.status < 300;
    this.url = init.url || '';
    this.redirected = false;
    this.type = 'basic';
    this.bodyUsed = false;
  }
  clone() {
    if (this.bodyUsed) throw new TypeError('Response.clone: Body has already been consumed.');
    return new Response(this._bytes.slice(), this);
  }
  static json(data, init = {}) {
    const headers = new Headers(init.headers);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    return new Response(JSON.stringify(data), { ...init, headers });
  }
  static error() { return new Response(null, { status: 0 }); }
}

const fetch = (input, init) => new Promise((resolve, reject) => {
  const request = new Request(input, init || {});
  if (request.signal && request.signal.aborted) {
    const e = new Error('The operation was aborted.');
    e.name = 'AbortError';
    reject(e);
    return;
  }
  const headers = [];
  request.headers.forEach((v, k) => headers.push([k, v]));
  const reply = JSON.parse(host.fetch(JSON.stringify({
    method: request.method, url: request.url, headers, body: bytesToBase64(request._bytes),
  })));
  if (reply.error !== undefined) {
    const e = new TypeError(`fetch failed: ${reply.error}`);
    e.cause = new Error(reply.error);
    reject(e);
    return;
  }
  const answer = reply.ok;
  resolve(new Response(base64ToBytes(answer.body), {
    status: answer.status, headers: answer.headers, url: request.url,
  }));
});

module.exports = { fetch, Headers, Request, Response };
