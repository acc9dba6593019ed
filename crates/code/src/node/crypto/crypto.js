// Node's `crypto` over the worker's host functions (Rust: sha1, sha2, md-5, hmac, getrandom):
// hashes, HMAC, random bytes, integers and UUIDs, timingSafeEqual, AES-GCM and AES-CBC ciphers.
// ECDSA P-256 and RSA signatures, RSA encryption (rsa, p256), keys as KeyObjects.
const { Buffer } = require('buffer');

const HASHES = ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'];
const hashName = (algorithm) => {
  const name = String(algorithm).toLowerCase().replace(/-/g, '');
  if (!HASHES.includes(name)) throw new Error(`Digest method not supported: ${algorithm}`);
  return name;
};

const bytesOf = (data, encoding, what) => {
  if (typeof data === 'string') return Buffer.from(data, encoding || 'utf8');
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (data && data.__tokenvault_key) return data.__tokenvault_key;
  throw new TypeError(`The "${what}" argument must be of type string or an instance of Buffer, TypedArray, or DataView`);
};

const output = (bytes, encoding) => {
  const out = Buffer.from(bytes);
  return encoding && encoding !== 'buffer' ? out.toString(encoding) : out;
};

class Hash {
  constructor(algorithm, key) {
    this._algorithm = hashName(algorithm);
    this._key = key;
    this._chunks = [];
    this._done = false;
  }
  update(data, encoding) {
    if (this._done) throw new Error('Digest already called');
    this._chunks.push(bytesOf(data, encoding, 'data'));
    return this;
  }
  digest(encoding) {
    if (this._done) throw new Error('Digest already called');
    this._done = true;
    const all = Buffer.concat(this._chunks);
    const bytes = host.digest(this._algorithm, this._key === undefined ? null : this._key, all);
    return output(bytes, encoding);
  }
  copy() {
    if (this._done) throw new Error('Digest already called');
    const copy = new Hash(this._algorithm, this._key);
    copy._chunks = this._chunks.slice();
    return copy;
  }
  // The stream side of a hash (Node's are Transform streams): `write`/`end`, then `read`.
  write(data, encoding) { this.update(data, encoding); return true; }
  end(data, encoding) {
    if (data !== undefined && data !== null && typeof data !== 'function') this.update(data, encoding);
    this._digest = this.digest();
    return this;
  }
  read() { const out = this._digest === undefined ? null : this._digest; this._digest = undefined; return out; }
}

const createHash = (algorithm) => new Hash(algorithm);
const createHmac = (algorithm, key) => new Hash(algorithm, bytesOf(key, 'utf8', 'key'));

const MAX_RANDOM = 1 << 20;
const randomBytes = (size, callback) => {
  if (!Number.isInteger(size) || size < 0 || size > MAX_RANDOM) {
    throw new RangeError(`The "size" argument must be an integer from 0 to ${MAX_RANDOM}`);
  }
  const out = Buffer.from(host.random(size));
  if (typeof callback === 'function') { queueMicrotask(() => callback(null, out)); return undefined; }
  return out;
};

const getRandomValues = (array) => {
  if (!ArrayBuffer.isView(array) || array instanceof Float32Array || array instanceof Float64Array || array instanceof DataView) {
    throw new TypeError('The data argument must be an integer-type TypedArray');
  }
  if (array.byteLength > 65536) throw new RangeError('The ArrayBufferView byte length exceeds 65536');
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(host.random(array.byteLength));
  return array;
};

const randomInt = (min, max, callback) => {
  if (max === undefined || typeof max === 'function') { callback = max; max = min; min = 0; }
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max <= min || max - min > 2 ** 48) {
    throw new RangeError('The "max" argument must be a safe integer greater than "min", within 2^48 of it');
  }
  const range = max - min;
  const limit = 2 ** 48 - (2 ** 48 % range);
  let value;
  do {
    const b = host.random(6);
    value = b.reduce((acc, byte) => acc * 256 + byte, 0);
  } while (value >= limit);
  const out = min + (value % range);
  if (typeof callback === 'function') { queueMicrotask(() => callback(null, out)); return undefined; }
  return out;
};

const timingSafeEqual = (a, b) => {
  const x = bytesOf(a, undefined, 'buf1');
  const y = bytesOf(b, undefined, 'buf2');
  if (x.byteLength !== y.byteLength) throw new RangeError('Input buffers must have the same byte length');
  let diff = 0;
  for (let i = 0; i < x.byteLength; i++) diff |= x[i] ^ y[i];
  return diff === 0;
};

// Ciphers: AES-GCM and AES-CBC in the host (`cipher.rs`); the whole message is encrypted or
// decrypted at `final()` (`update` answers an empty chunk), which is what code that joins
// `update` and `final` sees from Node.
const CIPHERS = ['aes-128-gcm', 'aes-192-gcm', 'aes-256-gcm', 'aes-128-cbc', 'aes-192-cbc', 'aes-256-cbc',
  'aes-128-ctr', 'aes-192-ctr', 'aes-256-ctr'];
class Cipher {
  constructor(encrypt, algorithm, key, iv, options) {
    this._encrypt = encrypt;
    this._algorithm = String(algorithm).toLowerCase();
    if (!CIPHERS.includes(this._algorithm)) throw new TypeError(`Unknown cipher: ${algorithm}`);
    this._gcm = this._algorithm.endsWith('-gcm');
    // Counter modes give their output as the input comes (GCM only when encrypting: what it
    // decrypts is released once authenticated, at `final`).
    this._streams = this._algorithm.endsWith('-ctr') || (this._gcm && encrypt);
    this._emitted = 0;
    this._key = Buffer.from(bytesOf(key, 'utf8', 'key'));
    this._iv = Buffer.from(bytesOf(iv, 'utf8', 'iv'));
    this._tagLength = (options && options.authTagLength) || 16;
    this._chunks = [];
    this._aad = null;
    this._tag = null;
    this._padding = true;
    this._done = false;
  }
  // The whole message so far through the host; for GCM encryption the tag is kept apart.
  _run() {
    const out = host.cipher(this._encrypt, this._algorithm, this._key, this._iv,
      Buffer.concat(this._chunks), { aad: this._aad, tag: this._tag, padding: this._padding });
    if (this._gcm && this._encrypt) {
      this._tag = Buffer.from(out.subarray(out.length - 16));
      return out.subarray(0, out.length - 16);
    }
    return out;
  }
  update(data, inputEncoding, outputEncoding) {
    if (this._done) throw new Error('Unsupported state');
    this._chunks.push(Buffer.from(bytesOf(data, inputEncoding, 'data')));
    if (!this._streams) return output(new Uint8Array(0), outputEncoding);
    const out = this._run();
    const fresh = out.subarray(this._emitted);
    this._emitted = out.length;
    return output(fresh, outputEncoding);
  }
  final(outputEncoding) {
    if (this._done) throw new Error('Unsupported state');
    this._done = true;
    const out = this._run();
    return output(out.subarray(this._streams ? this._emitted : 0), outputEncoding);
  }
  setAAD(aad) { this._aad = Buffer.from(bytesOf(aad, undefined, 'buffer')); return this; }
  setAutoPadding(padding = true) { this._padding = Boolean(padding); return this; }
  getAuthTag() {
    if (!this._gcm || !this._encrypt || !this._done) throw new Error('Invalid state for operation getAuthTag');
    return this._tag.subarray(0, this._tagLength);
  }
  setAuthTag(tag) {
    if (!this._gcm || this._encrypt) throw new Error('Invalid state for operation setAuthTag');
    this._tag = Buffer.from(bytesOf(tag, undefined, 'buffer'));
    return this;
  }
}
const createCipheriv = (algorithm, key, iv, options) => new Cipher(true, algorithm, key, iv, options);
const createDecipheriv = (algorithm, key, iv, options) => new Cipher(false, algorithm, key, iv, options);

// Keys: PEM text (PKCS#8, PKCS#1, SEC1, SPKI) held as given; `keys.rs` reads them. A
// KeyObject keeps its PEM; `export` answers it (or, for `der`, the bytes inside it) and a
// public KeyObject made from a private key the SPKI of its public half.
class KeyObject {
  constructor(type, pem, info) {
    Object.defineProperty(this, '__tokenvault_pem', { value: pem });
    this._type = type;
    this._kind = info.asymmetricKeyType;
  }
  get type() { return this._type; }
  get asymmetricKeyType() { return this._kind; }
  export(options) {
    const format = (options && options.format) || 'pem';
    if (format === 'pem') return this.__tokenvault_pem;
    if (format === 'der') {
      const body = this.__tokenvault_pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
      return Buffer.from(body, 'base64');
    }
    throw new TypeError(`The export format ${format} is not supported here (pem or der)`);
  }
  equals(other) { return other instanceof KeyObject && other.__tokenvault_pem === this.__tokenvault_pem; }
}
const pemText = (k) => {
  if (k instanceof KeyObject) return k.__tokenvault_pem;
  if (typeof k === 'string') return k;
  if (ArrayBuffer.isView(k)) return Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString('utf8');
  throw new TypeError('The "key" argument must be a PEM string, Buffer or KeyObject');
};
const keyOptions = (key) => (key && typeof key === 'object' && !ArrayBuffer.isView(key)
  && !(key instanceof KeyObject) && key.key !== undefined ? key : { key });
const pemOf = (key) => pemText(keyOptions(key).key);
const createPrivateKey = (key) => {
  const pem = pemOf(key);
  const info = host.keyInfo(pem);
  if (info.type !== 'private') throw new TypeError('The key is not a private key');
  return new KeyObject('private', pem, info);
};
// A secret key (HMAC, ciphers): its bytes, as `export()` gives them back.
const createSecretKey = (key, encoding) => {
  const bytes = Buffer.from(bytesOf(key, encoding, 'key'));
  const secret = new KeyObject('secret', '', { asymmetricKeyType: undefined });
  Object.defineProperty(secret, '__tokenvault_key', { value: bytes });
  secret.export = () => Buffer.from(bytes);
  Object.defineProperty(secret, 'symmetricKeySize', { value: bytes.length });
  return secret;
};
const createPublicKey = (key) => {
  const info = host.keyInfo(pemOf(key));
  return new KeyObject('public', info.publicPem, info);
};

// Signatures in the host (`sign.rs`): ECDSA P-256 with SHA-256 (DER signatures; verification
// also takes the 64-byte form), RSA PKCS#1 v1.5 or PSS with SHA-1 to SHA-512.
class Sign {
  constructor(algorithm) {
    this._algorithm = String(algorithm);
    this._chunks = [];
  }
  update(data, encoding) { this._chunks.push(Buffer.from(bytesOf(data, encoding, 'data'))); return this; }
  // The stream side (Node's are Writable streams).
  write(data, encoding) { this.update(data, encoding); return true; }
  end(data, encoding) {
    if (data !== undefined && data !== null && typeof data !== 'function') this.update(data, encoding);
    return this;
  }
  sign(key, outputEncoding) {
    return output(host.sign(this._algorithm, pemOf(key), Buffer.concat(this._chunks), keyOptions(key)), outputEncoding);
  }
  verify(key, signature, signatureEncoding) {
    const sig = Buffer.from(bytesOf(signature, signatureEncoding, 'signature'));
    return host.verify(this._algorithm, pemOf(key), Buffer.concat(this._chunks), sig, keyOptions(key));
  }
}
const createSign = (algorithm) => new Sign(algorithm);
const createVerify = (algorithm) => new Sign(algorithm);
const sign = (algorithm, data, key) => host.sign(algorithm || 'sha256', pemOf(key),
  Buffer.from(bytesOf(data, undefined, 'data')), keyOptions(key));
const verify = (algorithm, data, key, signature) => host.verify(algorithm || 'sha256', pemOf(key),
  Buffer.from(bytesOf(data, undefined, 'data')), Buffer.from(bytesOf(signature, undefined, 'signature')),
  keyOptions(key));

// Public-key encryption in the host (`seal.rs`): RSA with OAEP (SHA-1 unless `oaepHash` says)
// or, with `padding: RSA_PKCS1_PADDING`, PKCS#1 v1.5.
const publicEncrypt = (key, buffer) => Buffer.from(host.seal(true, pemOf(key),
  Buffer.from(bytesOf(buffer, undefined, 'buffer')), keyOptions(key)));
const privateDecrypt = (key, buffer) => Buffer.from(host.seal(false, pemOf(key),
  Buffer.from(bytesOf(buffer, undefined, 'buffer')), keyOptions(key)));

const constants = Object.freeze({
  RSA_PKCS1_PADDING: 1, RSA_NO_PADDING: 3, RSA_PKCS1_OAEP_PADDING: 4, RSA_PKCS1_PSS_PADDING: 6,
  RSA_PSS_SALTLEN_DIGEST: -1, RSA_PSS_SALTLEN_MAX_SIGN: -2, RSA_PSS_SALTLEN_AUTO: -2,
});

// ECDH on P-256 in the host (`ecdh.rs`): Node's `createECDH('prime256v1')` and
// `diffieHellman({privateKey, publicKey})`; the secret is the shared point's x-coordinate.
const CURVES = ['prime256v1', 'p-256', 'secp256r1'];
const pointFormat = (format) => format === 'compressed';
class ECDH {
  constructor(curve) {
    if (!CURVES.includes(String(curve).toLowerCase())) throw new TypeError(`Invalid EC curve name: ${curve} (prime256v1 only here)`);
    this._private = null;
  }
  generateKeys(encoding, format) {
    for (;;) {
      const candidate = Buffer.from(host.random(32));
      try { host.ecdhPublic(candidate, false); this._private = candidate; break; } catch (_) { /* out of range: draw again */ }
    }
    return this.getPublicKey(encoding, format);
  }
  setPrivateKey(key, encoding) {
    const bytes = Buffer.from(bytesOf(key, encoding, 'key'));
    host.ecdhPublic(bytes, false);
    this._private = bytes;
    return this;
  }
  // Deprecated in Node, still called (ec-key): the public key follows from the private one,
  // so a given one is only checked for its length.
  setPublicKey(key, encoding) {
    const bytes = Buffer.from(bytesOf(key, encoding, 'key'));
    if (bytes.length !== 65 && bytes.length !== 33) throw new Error('Failed to convert Buffer to EC_POINT');
    return this;
  }
  getPrivateKey(encoding) {
    if (!this._private) throw new Error('Failed to get ECDH private key');
    return output(this._private, encoding);
  }
  getPublicKey(encoding, format) {
    if (!this._private) throw new Error('Failed to get ECDH public key');
    return output(host.ecdhPublic(this._private, pointFormat(format)), encoding);
  }
  computeSecret(other, inputEncoding, outputEncoding) {
    if (!this._private) throw new Error('Failed to compute ECDH key');
    const peer = Buffer.from(bytesOf(other, inputEncoding, 'otherPublicKey'));
    return output(host.ecdhSecret(this._private, peer), outputEncoding);
  }
}
const createECDH = (curve) => new ECDH(curve);
const diffieHellman = (options) => {
  const o = options || {};
  return Buffer.from(host.ecdhPem(pemOf(o.privateKey), pemOf(o.publicKey)));
};

// HKDF and PBKDF2 in the host (`kdf.rs`).
const hkdfSync = (digest, ikm, salt, info, keylen) => {
  const out = host.hkdf(String(digest), Buffer.from(bytesOf(ikm, 'utf8', 'ikm')),
    Buffer.from(bytesOf(salt, 'utf8', 'salt')), Buffer.from(bytesOf(info, 'utf8', 'info')), keylen);
  return out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength);
};
const hkdf = (digest, ikm, salt, info, keylen, callback) => {
  let out; let error = null;
  try { out = hkdfSync(digest, ikm, salt, info, keylen); } catch (e) { error = e; }
  queueMicrotask(() => callback(error, out));
};
const pbkdf2Sync = (password, salt, iterations, keylen, digest) => Buffer.from(host.pbkdf2(
  String(digest === undefined ? 'sha1' : digest), Buffer.from(bytesOf(password, 'utf8', 'password')),
  Buffer.from(bytesOf(salt, 'utf8', 'salt')), iterations, keylen));
const pbkdf2 = (password, salt, iterations, keylen, digest, callback) => {
  let out; let error = null;
  try { out = pbkdf2Sync(password, salt, iterations, keylen, digest); } catch (e) { error = e; }
  queueMicrotask(() => callback(error, out));
};

const missing = (name) => () => {
  throw new TypeError(`crypto.${name} is not offered in this runtime (docs/decisions.md §7)`);
};

const webcrypto = { getRandomValues, randomUUID: () => host.uuid() };

module.exports = {
  createHash,
  createHmac,
  randomBytes,
  pseudoRandomBytes: randomBytes,
  randomFillSync: (buffer) => getRandomValues(buffer),
  randomInt,
  randomUUID: () => host.uuid(),
  getRandomValues,
  timingSafeEqual,
  getHashes: () => [...HASHES, 'RSA-SHA1', 'RSA-SHA224', 'RSA-SHA256', 'RSA-SHA384', 'RSA-SHA512'],
  getCurves: () => ['prime256v1'],
  createECDH,
  ECDH,
  diffieHellman,
  hkdf,
  hkdfSync,
  pbkdf2,
  pbkdf2Sync,
  createSecretKey,
  webcrypto,
  createCipheriv,
  createDecipheriv,
  getCiphers: () => CIPHERS.slice(),
  createSign,
  createVerify,
  publicEncrypt,
  privateDecrypt,
  createPublicKey,
  createPrivateKey,
  KeyObject,
  constants,
  generateKeyPair: missing('generateKeyPair'),
  generateKeyPairSync: missing('generateKeyPairSync'),
  privateEncrypt: missing('privateEncrypt'),
  publicDecrypt: missing('publicDecrypt'),
  sign: (algorithm, data, key, callback) => {
    const out = Buffer.from(sign(algorithm, data, key));
    if (typeof callback === 'function') { queueMicrotask(() => callback(null, out)); return undefined; }
    return out;
  },
  verify: (algorithm, data, key, signature, callback) => {
    const out = verify(algorithm, data, key, signature);
    if (typeof callback === 'function') { queueMicrotask(() => callback(null, out)); return undefined; }
    return out;
  },
};
