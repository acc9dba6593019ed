// Node's `assert`: the assertions packages call at load and in checks (`assert(value)`, `ok`,
// `equal`, `strictEqual`, `deepStrictEqual`, `throws`, `rejects`, …), throwing Node's
// `AssertionError` (`code` `ERR_ASSERTION`). Deep equality is `util.isDeepStrictEqual`, also
// for the loose forms.
const { inspect, isDeepStrictEqual } = require('util');

class AssertionError extends Error {
  constructor(options) {
    const o = options || {};
    super(o.message !== undefined ? String(o.message)
      : `${inspect(o.actual)} ${o.operator} ${inspect(o.expected)}`);
    this.name = 'AssertionError';
    this.code = 'ERR_ASSERTION';
    this.actual = o.actual;
    this.expected = o.expected;
    this.operator = o.operator;
    this.generatedMessage = o.message === undefined;
  }
}

const fail = (actual, expected, message, operator) => {
  if (message instanceof Error) throw message;
  throw new AssertionError({ actual, expected, message, operator });
};

function assert(value, message) {
  if (!value) fail(value, true, message === undefined ? 'The expression evaluated to a falsy value' : message, '==');
}
assert.ok = assert;
assert.AssertionError = AssertionError;
assert.fail = (message) => fail(undefined, undefined, message === undefined ? 'Failed' : message, 'fail');
// eslint-disable-next-line eqeqeq
assert.equal = (a, b, message) => { if (!(a == b || (a !== a && b !== b))) fail(a, b, message, '=='); };
// eslint-disable-next-line eqeqeq
assert.notEqual = (a, b, message) => { if (a == b || (a !== a && b !== b)) fail(a, b, message, '!='); };
assert.strictEqual = (a, b, message) => { if (!Object.is(a, b)) fail(a, b, message, 'strictEqual'); };
assert.notStrictEqual = (a, b, message) => { if (Object.is(a, b)) fail(a, b, message, 'notStrictEqual'); };
assert.deepEqual = (a, b, message) => { if (!isDeepStrictEqual(a, b)) fail(a, b, message, 'deepEqual'); };
assert.deepStrictEqual = (a, b, message) => { if (!isDeepStrictEqual(a, b)) fail(a, b, message, 'deepStrictEqual'); };
assert.notDeepEqual = (a, b, message) => { if (isDeepStrictEqual(a, b)) fail(a, b, message, 'notDeepEqual'); };
assert.notDeepStrictEqual = (a, b, message) => { if (isDeepStrictEqual(a, b)) fail(a, b, message, 'notDeepStrictEqual'); };
assert.ifError = (value) => { if (value !== null && value !== undefined) throw value; };
assert.match = (s, re, message) => { if (!re.test(s)) fail(s, re, message, 'match'); };
assert.doesNotMatch = (s, re, message) => { if (re.test(s)) fail(s, re, message, 'doesNotMatch'); };
const matches = (error, expected) => {
  if (expected === undefined) return true;
  if (typeof expected === 'function' && expected.prototype !== undefined && error instanceof expected) return true;
  if (expected instanceof RegExp) return expected.test(String(error && error.message !== undefined ? error.message : error));
  if (typeof expected === 'function') return expected(error) === true;
  if (expected && typeof expected === 'object') {
    return Object.keys(expected).every((k) => (expected[k] instanceof RegExp
      ? expected[k].test(error[k]) : isDeepStrictEqual(error[k], expected[k])));
  }
  return false;
};
assert.throws = (fn, expected, message) => {
  try { fn(); } catch (e) {
    if (!matches(e, expected)) throw e;
    return;
  }
  fail(undefined, expected, typeof expected === 'string' ? expected : message || 'Missing expected exception.', 'throws');
};
assert.doesNotThrow = (fn, message) => {
  try { fn(); } catch (e) { fail(e, undefined, message || `Got unwanted exception: ${e && e.message}`, 'doesNotThrow'); }
};
assert.rejects = async (promiseOrFn, expected, message) => {
  try { await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn); } catch (e) {
    if (!matches(e, expected)) throw e;
    return;
  }
  fail(undefined, expected, message || 'Missing expected rejection.', 'rejects');
};
assert.doesNotReject = async (promiseOrFn, message) => {
  try { await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn); } catch (e) {
    fail(e, undefined, message || `Got unwanted rejection: ${e && e.message}`, 'doesNotReject');
  }
};
assert.strict = assert;
module.exports = assert;
