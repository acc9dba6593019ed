// Node's `util`, the parts tenant code uses: format, inspect, promisify, callbackify, inherits,
// deprecate, types, isDeepStrictEqual, TextEncoder/TextDecoder.
const inspect = (value, options) => {
  const depth = options && typeof options.depth === 'number' ? options.depth : 2;
  const seen = new Set();
  const show = (v, level) => {
    if (typeof v === 'string') return level === 0 ? v : `'${v}'`;
    if (typeof v === 'bigint') return `${v}n`;
    if (typeof v === 'function') return `[Function: ${v.name || '(anonymous)'}]`;
    if (typeof v === 'symbol') return v.toString();
    if (v === null || typeof v !== 'object') return String(v);
    if (v instanceof Error) return v.stack || `${v.name}: ${v.message}`;
    if (v instanceof Date) return v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (seen.has(v)) return '[Circular *1]';
    if (level > depth) return Array.isArray(v) ? '[Array]' : '[Object]';
    seen.add(v);
    let out;
    if (Array.isArray(v)) {
      out = v.length === 0 ? '[]' : `[ ${v.map((x) => show(x, level + 1)).join(', ')} ]`;
    } else if (v instanceof Map) {
      out = `Map(${v.size}) { ${[...v].map(([k, x]) => `${show(k, level + 1)} => ${show(x, level + 1)}`).join(', ')} }`;
    } else if (v instanceof Set) {
      out = `Set(${v.size}) { ${[...v].map((x) => show(x, level + 1)).join(', ')} }`;
    } else if (ArrayBuffer.isView(v)) {
      const name = v.constructor && v.constructor.name ? v.constructor.name : 'TypedArray';
      out = `${name}(${v.length}) [ ${Array.prototype.slice.call(v, 0, 50).join(', ')}${v.length > 50 ? ', ...' : ''} ]`;
    } else {
      const keys = Object.keys(v);
      const body = keys.map((k) => `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : `'${k}'`}: ${show(v[k], level + 1)}`);
      out = body.length === 0 ? '{}' : `{ ${body.join(', ')} }`;
    }
    seen.delete(v);
    return out;
  };
  return show(value, 0);
};
inspect.custom = Symbol.for('nodejs.util.inspect.custom');

const format = (first, ...args) => {
  if (typeof first !== 'string') return [first, ...args].map((a) => inspect(a)).join(' ');
  let i = 0;
  const out = first.replace(/%[sdifjoOc%]/g, (m) => {
    if (m === '%%') return '%';
    if (i >= args.length) return m;
    const a = args[i++];
    switch (m) {
      case '%s': return typeof a === 'string' ? a : (typeof a === 'object' && a !== null ? inspect(a, { depth: 0 }) : String(a));
      case '%d': return typeof a === 'bigint' ? `${a}n` : String(Number(a));
      case '%i': return typeof a === 'bigint' ? `${a}n` : String(parseInt(a, 10));
      case '%f': return String(parseFloat(a));
      case '%j': try { return JSON.stringify(a); } catch (_) { return '[Circular]'; }
      case '%c': return '';
      default: return inspect(a);
    }
  });
  const rest = args.slice(i).map((a) => (typeof a === 'string' ? a : inspect(a)));
  return [out, ...rest].join(' ');
};

const custom = Symbol.for('nodejs.util.promisify.custom');
const promisify = (original) => {
  if (typeof original !== 'function') throw new TypeError('The "original" argument must be of type function');
  if (original[custom]) return original[custom];
  return function (...args) {
    return new Promise((resolve, reject) => {
      original.call(this, ...args, (err, ...values) => {
        if (err) reject(err); else resolve(values.length > 1 ? values : values[0]);
      });
    });
  };
};
promisify.custom = custom;

const callbackify = (original) => function (...args) {
  const callback = args.pop();
  original.apply(this, args).then(
    (value) => queueMicrotask(() => callback(null, value)),
    (err) => queueMicrotask(() => callback(err || new Error('Promise was rejected with a falsy value'))),
  );
};

const inherits = (ctor, superCtor) => {
  Object.defineProperty(ctor, 'super_', { value: superCtor, writable: true, configurable: true });
  Object.setPrototypeOf(ctor.prototype, superCtor.prototype);
};

const deprecate = (fn) => fn;

const tag = (v) => Object.prototype.toString.call(v);
const types = {
  isDate: (v) => v instanceof Date,
  isRegExp: (v) => v instanceof RegExp,
  isPromise: (v) => v instanceof Promise,
  isMap: (v) => v instanceof Map,
  isSet: (v) => v instanceof Set,
  isTypedArray: (v) => ArrayBuffer.isView(v) && !(v instanceof DataView),
  isUint8Array: (v) => v instanceof Uint8Array,
  isArrayBuffer: (v) => v instanceof ArrayBuffer,
  isAnyArrayBuffer: (v) => v instanceof ArrayBuffer,
  isNativeError: (v) => v instanceof Error,
  isAsyncFunction: (v) => tag(v) === '[object AsyncFunction]',
  isGeneratorFunction: (v) => tag(v) === '[object GeneratorFunction]',
  isBoxedPrimitive: (v) => ['[object Number]', '[object String]', '[object Boolean]'].includes(tag(v)) && typeof v === 'object',
};

const isDeepStrictEqual = (a, b) => {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && isDeepStrictEqual(a[k], b[k]));
};

module.exports = {
  format, inspect, promisify, callbackify, inherits, deprecate, types, isDeepStrictEqual,
  isArray: Array.isArray,
  isString: (v) => typeof v === 'string',
  isNumber: (v) => typeof v === 'number',
  isBoolean: (v) => typeof v === 'boolean',
  isFunction: (v) => typeof v === 'function',
  isObject: (v) => v !== null && typeof v === 'object',
  isUndefined: (v) => v === undefined,
  isNullOrUndefined: (v) => v === null || v === undefined,
  isPrimitive: (v) => v === null || (typeof v !== 'object' && typeof v !== 'function'),
  isDate: types.isDate,
  isRegExp: types.isRegExp,
  isError: types.isNativeError,
  isNull: (v) => v === null,
  isSymbol: (v) => typeof v === 'symbol',
  isBuffer: (v) => require('buffer').Buffer.isBuffer(v),
  TextEncoder,
  TextDecoder,
};
