// Tokens: search and read with the console's key, under its own rules (a management key holds
// no token permission: the vault answers 403, and the console shows no more than that).

import { call, post } from '/console/js/api.js';
import { el, field, fill, pretty, table } from '/console/js/dom.js';

export async function render(view) {
  const query = el('input', { type: 'text', id: 'token-query', placeholder: 'data:6789 AND metadata.customer:c-42' });
  const id = el('input', { type: 'text', id: 'token-id', placeholder: 'token id' });
  const results = el('div', { id: 'token-results' });
  const one = el('pre', { class: 'out', id: 'token-read' }, 'A token read shows here, under your key\'s transform.');
  const search = async () => {
    try {
      const page = await post('/tokens/search', { query: query.value, page: 1, size: 50 });
      fill(results, el('p', { class: 'muted' }, `${page.pagination.total_items} found`), table([
        ['Id', (t) => t.id, 'mono'],
        ['Type', (t) => t.type],
        ['Data', (t) => (typeof t.data === 'string' ? t.data : pretty(t.data)), 'mono'],
        ['Containers', (t) => (t.containers || []).join(', ')],
      ], page.data));
    } catch (e) {
      fill(results, el('p', { class: 'error' }, e.message));
    }
  };
  const read = async () => {
    try {
      fill(one, pretty(await call('GET', `/tokens/${encodeURIComponent(id.value.trim())}`)));
    } catch (e) {
      fill(one, e.message);
    }
  };
  fill(view,
    el('h1', {}, 'Tokens'),
    el('section', { class: 'card' },
      field('Search', query),
      el('button', { id: 'token-search', onclick: search }, 'Search'),
      results),
    el('section', { class: 'card' },
      field('Read a token', id),
      el('button', { id: 'token-get', onclick: read }, 'Read'),
      one));
}
