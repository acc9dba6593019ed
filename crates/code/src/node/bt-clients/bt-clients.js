// Basis Theory's client packages, provided by the vault (docs/decisions.md §7):
// `@basis-theory/basis-theory-js` (`new BasisTheory().init(apiKey)`) and
// `@basis-theory/node-sdk` (also as `-1.5` and `-2`: `new BasisTheoryClient({apiKey})`). Their
// calls never touch the network: each goes over the worker's channel as a `req.bt` call does,
// carrying the key the client was built with, and the server answers it as the reactor's
// application only when that key is the call's own (`req.applicationOptions.apiKey`); any
// other key, a past call's included, is refused with a 401. `baseUrl` and the other options
// are read and ignored.
const client = (apiKey) => host.makeSvc((method, args) => host.client(method, args,
  apiKey === undefined || apiKey === null ? '' : String(apiKey)));

// basis-theory-js: errors are `BasisTheoryApiError` with `status` and `data`.
class BasisTheoryApiError extends Error {
  constructor(error) {
    super(error && error.message);
    this.name = 'BasisTheoryApiError';
    this.status = error && error.status;
    this.data = error && error.data;
  }
}
const legacy = (promise) => promise.catch((e) => { throw new BasisTheoryApiError(e); });
class BasisTheory {
  init(apiKey, _options) {
    const main = client(apiKey);
    const pick = (options) => (options && options.apiKey ? client(options.apiKey) : main);
    this.tokens = Object.freeze({
      create: (body, options) => legacy(pick(options).tokens.create(body)),
      retrieve: (id, options) => legacy(pick(options).tokens.retrieve(id)),
      update: (id, patch, options) => legacy(pick(options).tokens.update(id, patch)),
      delete: (id, options) => legacy(pick(options).tokens.delete(id)),
      list: (query, options) => legacy(pick(options).tokens.list(query)),
    });
    this.tokenize = (body, options) => legacy(pick(options).tokenize(body));
    this.detokenize = (body, options) => legacy(pick(options).detokenize(body));
    return Promise.resolve(this);
  }
}

// node-sdk (Fern-made): answers in camelCase, errors `BasisTheoryError` with `statusCode` and
// `body`, a class per status.
const camel = (key) => key.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
const camelToken = (token) => {
  if (!token || typeof token !== 'object' || Array.isArray(token)) return token;
  const out = {};
  for (const key of Object.keys(token)) out[key === 'data' || key === 'metadata' ? key : camel(key)] = token[key];
  return out;
};
class BasisTheoryError extends Error {
  constructor(options) {
    const o = options || {};
    super(o.message || `Status code: ${o.statusCode}`);
    this.name = 'BasisTheoryError';
    this.statusCode = o.statusCode;
    this.body = o.body;
  }
}
const STATUS_ERRORS = {
  400: 'BadRequestError', 401: 'UnauthorizedError', 403: 'ForbiddenError', 404: 'NotFoundError',
  409: 'ConflictError', 422: 'UnprocessableEntityError',
};
const sdkErrors = {};
for (const [status, name] of Object.entries(STATUS_ERRORS)) {
  sdkErrors[name] = { [name]: class extends BasisTheoryError {
    constructor(body) { super({ message: name, statusCode: Number(status), body }); this.name = name; }
  } }[name];
}
const fern = (promise, shape) => promise.then(shape, (e) => {
  const name = STATUS_ERRORS[e.status];
  throw name ? new sdkErrors[name](e.data) : new BasisTheoryError({ message: e.message, statusCode: e.status, body: e.data });
});
const page = (answer) => {
  const data = ((answer && answer.data) || []).map(camelToken);
  return { data, pagination: answer && answer.pagination, hasNextPage: () => false,
    [Symbol.asyncIterator]: async function* items() { yield* data; } };
};
class BasisTheoryClient {
  constructor(options) {
    const svc = client(options && options.apiKey);
    this.tokens = Object.freeze({
      create: (body) => fern(svc.tokens.create(body), camelToken),
      get: (id) => fern(svc.tokens.retrieve(id), camelToken),
      update: (id, patch) => fern(svc.tokens.update(id, patch), camelToken),
      delete: (id) => fern(svc.tokens.delete(id), () => undefined),
      list: (query) => fern(svc.tokens.list(query), page),
      tokenize: (body) => fern(svc.tokenize(body), (v) => v),
      detokenize: (body) => fern(svc.detokenize(body), (v) => v),
    });
  }
}

module.exports = {
  basisTheoryJs: { BasisTheory, BasisTheoryApiError },
  nodeSdk: { BasisTheoryClient, BasisTheoryError, BasisTheory: { ...sdkErrors }, ...sdkErrors },
};
