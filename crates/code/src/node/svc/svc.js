// The builder of `req.svc` (see prelude.js): a module of its own, compiled to bytecode once per
// runtime and loaded into a context only when a call first needs a client.
export default function svcModule() {
  'use strict';
  // Builds `req.svc` (also `req.bt`) around the host's blocking call: each method returns a
  // promise of the JSON the HTTP API returns, or rejects with an `Error` carrying the problem
  // (`status`, `title`, `detail`, `errors`; the whole body as `data` and `problem`, the errors
  // also as `details`, as Basis Theory's SDK errors carry them). The fields of a token the
  // SDKs spell in camelCase are taken in either spelling.
  const CAMEL = {
    fingerprintExpression: 'fingerprint_expression', deduplicateToken: 'deduplicate_token',
    expiresAt: 'expires_at', searchIndexes: 'search_indexes', idempotencyKey: 'idempotency_key',
  };
  const snakeFields = (o) => {
    if (!o || typeof o !== 'object' || Array.isArray(o)) return o;
    const out = {};
    for (const k of Object.keys(o)) out[Object.prototype.hasOwnProperty.call(CAMEL, k) ? CAMEL[k] : k] = o[k];
    return out;
  };
  // A tokenize body: token requests (objects with `type` and `data`) anywhere in its shape.
  const snakeTokens = (v) => {
    if (Array.isArray(v)) return v.map(snakeTokens);
    if (v && typeof v === 'object') {
      if ('type' in v && 'data' in v) return snakeFields(v);
      const out = {};
      for (const k of Object.keys(v)) out[k] = snakeTokens(v[k]);
      return out;
    }
    return v;
  };
  // Also what the client packages (`bt-clients/bt-clients.js`) build their clients on.
  return function svc(call) {
    const invoke = (method, args) => new Promise((resolve, reject) => {
      const out = JSON.parse(call(method, JSON.stringify(args)));
      if (Object.prototype.hasOwnProperty.call(out, 'ok')) { resolve(out.ok); return; }
      const problem = out.error || {};
      const error = new Error(problem.detail || problem.title || 'the svc call failed');
      error.status = problem.status;
      error.title = problem.title;
      error.detail = problem.detail;
      error.errors = problem.errors;
      error.details = problem.errors;
      error.data = problem;
      error.problem = problem;
      reject(error);
    });
    return Object.freeze({
      tokens: Object.freeze({
        create: (body) => invoke('tokens.create', [snakeFields(body)]),
        retrieve: (id) => invoke('tokens.retrieve', [id]),
        update: (id, patch) => invoke('tokens.update', [id, snakeFields(patch)]),
        delete: (id) => invoke('tokens.delete', [id]),
        list: (query) => invoke('tokens.list', [query === undefined ? {} : query]),
      }),
      tokenize: (body) => invoke('tokenize', [snakeTokens(body)]),
      detokenize: (body) => invoke('detokenize', [body]),
    });
  }
}
