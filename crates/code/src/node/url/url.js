// Node's `url`: the WHATWG `URL` (parsed and set by the host's `url` crate, `mod.rs`),
// `URLSearchParams`, and the legacy `parse`, `format` and `resolve`.
const FIELDS = ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port',
  'pathname', 'search', 'hash', 'origin'];

const decodeForm = (s) => {
  try { return decodeURIComponent(s.replace(/\+/g, ' ')); } catch (_) { return s; }
};
const encodeForm = (s) => encodeURIComponent(s)
  .replace(/%20/g, '+')
  .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

class URLSearchParams {
  constructor(init) {
    this._list = [];
    this._url = null;
    if (init === undefined || init === null) return;
    if (typeof init === 'string') {
      this._parse(init);
    } else if (typeof init === 'object' && typeof init[Symbol.iterator] === 'function') {
      for (const pair of init) {
        const [k, v] = Array.from(pair);
        this._list.push([String(k), String(v)]);
      }
    } else if (typeof init === 'object') {
      for (const k of Object.keys(init)) this._list.push([k, String(init[k])]);
    } else {
      this._parse(String(init));
    }
  }
  _parse(text) {
    this._list = [];
    const s = text.startsWith('?') ? text.slice(1) : text;
    for (const part of s.split('&')) {
      if (part === '') continue;
      const at = part.indexOf('=');
      const k = at < 0 ? part : part.slice(0, at);
      const v = at < 0 ? '' : part.slice(at + 1);
      this._list.push([decodeForm(k), decodeForm(v)]);
    }
  }
  _changed() { if (this._url) this._url._setSearch(this.toString()); }
  get size() { return this._list.length; }
  append(k, v) { this._list.push([String(k), String(v)]); this._changed(); }
  delete(k) { k = String(k); this._list = this._list.filter(([x]) => x !== k); this._changed(); }
  get(k) { k = String(k); const f = this._list.find(([x]) => x === k); return f ? f[1] : null; }
  getAll(k) { k = String(k); return this._list.filter(([x]) => x === k).map(([, v]) => v); }
  has(k) { k = String(k); return this._list.some(([x]) => x === k); }
  set(k, v) {
    k = String(k); v = String(v);
    const at = this._list.findIndex(([x]) => x === k);
    if (at < 0) this._list.push([k, v]);
    else this._list = this._list.filter(([x], i) => x !== k || i === at).map((p, i) => (i === at ? [k, v] : p));
    this._changed();
  }
  sort() { this._list.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)); this._changed(); }
  forEach(callback, thisArg) { for (const [k, v] of this._list) callback.call(thisArg, v, k, this); }
  keys() { return this._list.map(([k]) => k)[Symbol.iterator](); }
  values() { return this._list.map(([, v]) => v)[Symbol.iterator](); }
  entries() { return this._list.map(([k, v]) => [k, v])[Symbol.iterator](); }
  [Symbol.iterator]() { return this.entries(); }
  toString() { return this._list.map(([k, v]) => `${encodeForm(k)}=${encodeForm(v)}`).join('&'); }
  get [Symbol.toStringTag]() { return 'URLSearchParams'; }
}

class URL {
  constructor(input, base) {
    let parts;
    try {
      parts = host.url(String(input), base === undefined ? undefined : String(base), undefined, undefined);
    } catch (e) {
      // Node's code, which packages test for (follow-redirects does at load).
      if (e instanceof TypeError) { e.code = 'ERR_INVALID_URL'; e.input = String(input); }
      throw e;
    }
    this._set(parts);
  }
  _set(parts) {
    this._parts = {};
    FIELDS.forEach((f, i) => { this._parts[f] = parts[i]; });
    if (this._params) this._params._parse(this._parts.search);
  }
  _update(field, value) { this._set(host.url(this._parts.href, undefined, field, String(value))); }
  _setSearch(search) {
    this._set(host.url(this._parts.href, undefined, 'search', search));
  }
  get searchParams() {
    if (!this._params) {
      this._params = new URLSearchParams(this._parts.search);
      this._params._url = this;
    }
    return this._params;
  }
  get href() { return this._parts.href; }
  set href(v) { this._set(host.url(String(v), undefined, undefined, undefined)); }
  get origin() { return this._parts.origin; }
  toString() { return this._parts.href; }
  toJSON() { return this._parts.href; }
  get [Symbol.toStringTag]() { return 'URL'; }
  static canParse(input, base) {
    try { host.url(String(input), base === undefined ? undefined : String(base), undefined, undefined); return true; } catch (_) { return false; }
  }
}
for (const field of ['protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash']) {
  Object.defineProperty(URL.prototype, field, {
    get() { return this._parts[field]; },
    set(v) { this._update(field, v); },
    configurable: true,
  });
}

// The legacy API, as Node.js 16 answers it for absolute and relative URLs.
const parse = (text, parseQuery) => {
  const s = String(text);
  const out = {
    protocol: null, slashes: null, auth: null, host: null, port: null, hostname: null,
    hash: null, search: null, query: parseQuery ? {} : null, pathname: null, path: null, href: s,
  };
  let u = null;
  try { u = new URL(s); } catch (_) { u = null; }
  if (u) {
    out.protocol = u.protocol;
    out.slashes = /^[a-z][a-z0-9+.-]*:\/\//i.test(s) || null;
    out.auth = u.username ? (u.password ? `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}` : decodeURIComponent(u.username)) : null;
    out.host = u.host || '';
    out.port = u.port || null;
    out.hostname = u.hostname || '';
    out.hash = u.hash || null;
    out.search = u.search || (s.includes('?') ? '?' : null);
    out.pathname = u.pathname || '/';
    out.href = u.href;
  } else {
    const hashAt = s.indexOf('#');
    const beforeHash = hashAt < 0 ? s : s.slice(0, hashAt);
    out.hash = hashAt < 0 ? null : s.slice(hashAt);
    const queryAt = beforeHash.indexOf('?');
    out.pathname = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt);
    out.search = queryAt < 0 ? null : beforeHash.slice(queryAt);
  }
  const q = out.search ? out.search.slice(1) : '';
  out.query = parseQuery ? require('querystring').parse(q) : (out.search ? q : null);
  out.path = out.pathname === null ? null : out.pathname + (out.search || '');
  return out;
};

const format = (value) => {
  if (typeof value === 'string') return value;
  if (value instanceof URL) return value.href;
  const o = value || {};
  const protocol = o.protocol ? (o.protocol.endsWith(':') ? o.protocol : `${o.protocol}:`) : '';
  const host = o.host || (o.hostname ? o.hostname + (o.port ? `:${o.port}` : '') : '');
  const auth = o.auth ? `${encodeURIComponent(o.auth).replace(/%3A/i, ':')}@` : '';
  let search = o.search || '';
  if (!search && o.query && typeof o.query === 'object') {
    const q = require('querystring').stringify(o.query);
    if (q) search = `?${q}`;
  }
  if (search && !search.startsWith('?')) search = `?${search}`;
  const hash = o.hash ? (o.hash.startsWith('#') ? o.hash : `#${o.hash}`) : '';
  const slashes = o.slashes || /^(https?|ftp|file|wss?):$/.test(protocol) ? '//' : '';
  let pathname = o.pathname || '';
  if (host && pathname && !pathname.startsWith('/')) pathname = `/${pathname}`;
  return `${protocol}${host || auth ? slashes : ''}${auth}${host}${pathname}${search}${hash}`;
};

const resolve = (from, to) => new URL(String(to), new URL(String(from), 'resolve://')).href.replace(/^resolve:\/\//, '');

module.exports = { URL, URLSearchParams, parse, format, resolve };
