// The audit log: filters, a page of entries, and the chain's verification.

import { get } from '/console/js/api.js';
import { el, field, fill, table } from '/console/js/dom.js';
import { pager } from '/console/js/paging.js';

/** A datetime-local value as RFC 3339 (UTC), or null. */
function instant(input) {
  if (!input.value) return null;
  return new Date(input.value).toISOString();
}

export async function render(view) {
  const types = await get('/logs/entity-types');
  const entityType = el('select', { id: 'log-entity-type' }, el('option', { value: '' }, 'any'),
    types.map((t) => el('option', { value: t.value }, t.display_name)));
  const entityId = el('input', { type: 'text', id: 'log-entity-id' });
  const start = el('input', { type: 'datetime-local', id: 'log-start' });
  const end = el('input', { type: 'datetime-local', id: 'log-end' });
  const list = el('div', { id: 'log-list' });
  const verdict = el('div', { id: 'log-verify-result' });
  const load = async (page = 1) => {
    const query = new URLSearchParams({ page: String(page), size: '50' });
    if (entityType.value) query.set('entity_type', entityType.value);
    if (entityId.value.trim()) query.set('entity_id', entityId.value.trim());
    const from = instant(start);
    const to = instant(end);
    if (from) query.set('start_date', from);
    if (to) query.set('end_date', to);
    const result = await get(`/logs?${query}`);
    fill(list, table([
      ['#', (e) => String(e.sequence)],
      ['When', (e) => e.created_at],
      ['Actor', (e) => `${e.actor_type}${e.actor_id ? ` ${e.actor_id}` : ''}`, 'mono'],
      ['Operation', (e) => e.operation],
      ['Entity', (e) => e.entity_type],
      ['Entity id', (e) => e.entity_id, 'mono'],
      ['Trace', (e) => e.trace_id || '', 'mono'],
    ], result.data, 'No entry matches.'), pager(result.pagination, load));
  };
  const verify = async () => {
    fill(verdict, 'Walking the chain…');
    const v = await get('/logs/verify');
    fill(verdict, v.ok
      ? el('p', { class: 'ok' }, `The chain holds: ${v.entries} entries checked, head at ${v.head_sequence ?? 0}.`)
      : el('p', { class: 'error' }, `The chain is broken at entry ${v.first_broken.sequence}: ${v.first_broken.reason}`));
  };
  fill(view,
    el('h1', {}, 'Audit log'),
    el('section', { class: 'card' },
      el('div', { class: 'row' }, field('Entity type', entityType), field('Entity id', entityId),
        field('From', start), field('To', end)),
      el('button', { id: 'log-filter', onclick: () => load(1) }, 'Filter'),
      el('button', { class: 'quiet', id: 'log-verify', onclick: verify }, 'Verify the chain'),
      verdict),
    list);
  await load(1);
}
