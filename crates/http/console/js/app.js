// The console: a login with an API key, then one page per area, chosen by the URL's hash.

import { call, forget, hasKey, setKey, ApiError } from '/console/js/api.js';
import { el, fill, toast } from '/console/js/dom.js';
import * as tenant from '/console/js/tenant.js';
import * as applications from '/console/js/applications.js';
import * as reactors from '/console/js/reactors.js';
import * as proxies from '/console/js/proxies.js';
import * as tokens from '/console/js/tokens.js';
import * as logs from '/console/js/logs.js';
import * as usage from '/console/js/usage.js';

const PAGES = { tenant, applications, reactors, proxies, tokens, logs, usage };
const main = document.getElementById('main');
const nav = document.getElementById('nav');
const logout = document.getElementById('logout');

function login(message) {
  nav.hidden = true;
  logout.hidden = true;
  const input = el('input', { type: 'password', id: 'key', autocomplete: 'off', placeholder: 'key_…', spellcheck: 'false' });
  const remember = el('input', { type: 'checkbox', id: 'remember' });
  const error = el('p', { class: 'error', id: 'login-error' }, message || '');
  const form = el('form', { class: 'card', id: 'login' },
    el('h1', {}, 'Log in'),
    el('p', { class: 'muted' }, 'Paste an API key (the bootstrap management key, for instance). It stays in this tab; nothing is kept in a cookie.'),
    el('label', { for: 'key' }, 'API key'), input,
    el('label', { class: 'inline' }, remember, 'Keep it in this tab until it closes (sessionStorage)'),
    el('div', {}, el('button', { type: 'submit', id: 'login-submit' }, 'Log in')),
    error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = input.value.trim();
    setKey(value, remember.checked);
    try {
      // 401: the key is refused. Anything else (a 403 for a key without tenant:read) is a key.
      await call('GET', '/tenants/self');
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        forget();
        fill(error, 'That key is refused (401): missing, unknown, expired or regenerated.');
        return;
      }
    }
    if (!location.hash || location.hash === '#/login') location.hash = '#/tenant'; // routes
    else route();
  });
  fill(main, el('div', { class: 'login' }, form));
  input.focus();
}

async function route() {
  if (!hasKey()) return login();
  nav.hidden = false;
  logout.hidden = false;
  const name = (location.hash.replace(/^#\//, '').split('/')[0]) || 'tenant';
  const page = PAGES[name] || tenant;
  for (const link of nav.querySelectorAll('a')) {
    link.classList.toggle('current', link.getAttribute('href') === `#/${name}`);
  }
  const view = el('div', { id: `page-${name}` });
  fill(main, view);
  try {
    await page.render(view);
  } catch (e) {
    view.append(el('p', { class: 'error' }, e.message));
  }
}

logout.addEventListener('click', () => {
  forget();
  if (location.hash) location.hash = ''; // routes to the login
  else login();
});
window.addEventListener('hashchange', route);
window.addEventListener('tokenvault:unauthorized', () => {
  if (nav.hidden) return; // the login form answers its own 401
  forget();
  toast('The key was refused (401); log in again.', true);
  login('The key was refused (401): log in again.');
});
window.addEventListener('unhandledrejection', (event) => toast(String(event.reason && event.reason.message || event.reason), true));
route();
