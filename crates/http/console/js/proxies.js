// Proxies: list, create (destination, transforms, require_auth), delete, and a test call.

import { del, get, post } from '/console/js/api.js';
import { el, field, fill, parseJson, table, toast } from '/console/js/dom.js';
import { confirmed } from '/console/js/paging.js';
import { editor } from '/console/js/editor.js';

async function testCall(out, proxy, method, tail, body, useKey) {
  const headers = { 'SVC-PROXY-KEY': proxy.key, 'Content-Type': 'application/json' };
  if (useKey) headers['SVC-API-KEY'] = useKey;
  const response = await fetch(`/proxy${tail}`, {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : body,
    credentials: 'omit',
    cache: 'no-store',
  });
  const text = await response.text();
  const destination = response.headers.get('SVC-PROXY-DESTINATION-STATUS');
  fill(out,
    el('div', {}, `${response.status} ${response.statusText}${destination ? ` (destination answered ${destination})` : ' (answered by the vault)'}`),
    el('div', {}, text));
}

export async function render(view) {
  const list = el('div', { id: 'proxy-list' });
  const tester = el('section', { class: 'card', id: 'proxy-tester' });
  const name = el('input', { type: 'text', id: 'proxy-name' });
  const destination = el('input', { type: 'text', id: 'proxy-destination', placeholder: 'https://api.processor.example/v1' });
  const requireAuth = el('input', { type: 'checkbox', id: 'proxy-require-auth', checked: true });
  const configuration = el('textarea', { id: 'proxy-configuration' }, '{}');
  const requestCode = editor('proxy-request-transform', '');
  const responseCode = editor('proxy-response-transform', '');
  const showTester = (proxy) => {
    const method = el('select', { id: 'proxy-method' }, ['POST', 'GET', 'PUT', 'PATCH', 'DELETE'].map((m) => el('option', { value: m }, m)));
    const tail = el('input', { type: 'text', id: 'proxy-tail', placeholder: '/charges?currency=eur' });
    const body = el('textarea', { id: 'proxy-body' }, '{"number": "{{ <token id> }}"}');
    const useKey = el('input', { type: 'password', id: 'proxy-api-key', autocomplete: 'off', placeholder: 'a key holding token:use (needed with require_auth)' });
    const out = el('pre', { class: 'out', id: 'proxy-output' }, 'The answer shows here.');
    fill(tester, el('h2', {}, `Test call through "${proxy.name}"`),
      el('div', { class: 'row' }, field('Method', method), field('Path and query after /proxy', tail)),
      field('Body', body), field('API key for the call', useKey),
      el('button', { id: 'proxy-send', onclick: () => testCall(out, proxy, method.value, tail.value, body.value, useKey.value.trim()) }, 'Send'),
      out);
  };
  const load = async () => {
    const result = await get('/proxies?size=100');
    fill(list, table([
      ['Name', (p) => p.name],
      ['Destination', (p) => p.destination_url, 'mono'],
      ['Auth', (p) => (p.require_auth ? 'required' : 'none')],
      ['Transforms', (p) => [p.request_transform ? 'request' : null, p.response_transform ? 'response' : null].filter(Boolean).join(', ') || '—'],
      ['', (p) => [
        el('button', { class: 'quiet', onclick: () => showTester(p) }, 'Test'),
        el('button', { class: 'danger', onclick: async () => {
          if (!confirmed(`proxy-${p.id}`)) return toast('Press Delete again to confirm.');
          await del(`/proxies/${p.id}`);
          await load();
        } }, 'Delete')]],
    ], result.data));
  };
  const create = async () => {
    const body = {
      name: name.value,
      destination_url: destination.value,
      require_auth: requireAuth.checked,
      configuration: parseJson(configuration.value, 'configuration', {}),
    };
    if (requestCode.value.trim()) body.request_transform = { code: requestCode.value };
    if (responseCode.value.trim()) body.response_transform = { code: responseCode.value };
    await post('/proxies', body);
    toast('Proxy created.');
    await load();
  };
  fill(view,
    el('h1', {}, 'Proxies'),
    list,
    tester,
    el('section', { class: 'card' },
      el('h2', {}, 'New proxy'),
      el('div', { class: 'row' }, field('Name', name), field('Destination URL', destination)),
      el('label', { class: 'inline' }, requireAuth, 'Require an API key holding token:use'),
      field('Configuration (JSON)', configuration),
      el('label', {}, 'Request transform (optional)'), requestCode.node,
      el('label', {}, 'Response transform (optional)'), responseCode.node,
      el('button', { id: 'proxy-create', onclick: create }, 'Create')));
  await load();
}
