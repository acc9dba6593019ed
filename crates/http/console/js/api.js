// Calls to the vault's API with the key the user gave: held in this tab's memory, or in
// sessionStorage when they asked for it; never in a cookie or in storage that outlives the tab. Every call sends it
// as the SVC-API-KEY header.

const STORED = 'tokenvault.console.key';
let key = sessionStorage.getItem(STORED);

export function hasKey() {
  return Boolean(key);
}

export function setKey(value, remember) {
  key = value;
  if (remember) sessionStorage.setItem(STORED, value);
  else sessionStorage.removeItem(STORED);
}

export function forget() {
  key = null;
  sessionStorage.removeItem(STORED);
}

/** A problem answered by the API: its status and body. */
export class ApiError extends Error {
  constructor(status, problem) {
    const detail = problem && (problem.detail || problem.title);
    const fields = problem && problem.errors
      ? Object.entries(problem.errors).map(([f, m]) => `${f}: ${[].concat(m).join(', ')}`).join('; ')
      : '';
    super([`${status}`, detail, fields].filter(Boolean).join(' — '));
    this.status = status;
    this.problem = problem;
  }
}

/** Calls `method path` with `body` (JSON) and the key; the parsed answer, or an ApiError. */
export async function call(method, path, body, extraHeaders = {}) {
  const used = key;
  const headers = { 'SVC-API-KEY': used || '', ...extraHeaders };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
  const text = await response.text();
  let parsed = null;
  if (text) {
    try { parsed = JSON.parse(text); } catch { parsed = text; }
  }
  if (!response.ok) {
    // A 401 for a key given up since (a late answer after a new login) changes nothing.
    if (response.status === 401 && used === key) window.dispatchEvent(new Event('tokenvault:unauthorized'));
    throw new ApiError(response.status, parsed);
  }
  return parsed;
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body);
export const put = (path, body) => call('PUT', path, body);
export const del = (path) => call('DELETE', path);
