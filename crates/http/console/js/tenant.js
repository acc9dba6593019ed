// The tenant and its settings: GET and PUT /tenants/self.

import { get, put } from '/console/js/api.js';
import { el, field, fill, toast } from '/console/js/dom.js';

const SETTINGS = [
  ['fingerprint_tokens', 'Fingerprint tokens'],
  ['deduplicate_tokens', 'Deduplicate tokens'],
];

export async function render(view) {
  const t = await get('/tenants/self');
  const name = el('input', { type: 'text', id: 'tenant-name', value: t.name });
  const boxes = SETTINGS.map(([key, label]) => [key, el('input', { type: 'checkbox', id: `setting-${key}`, checked: (t.settings || {})[key] === 'true' }), label]);
  const status = el('span', { class: 'muted' });
  fill(view,
    el('h1', {}, 'Tenant'),
    el('section', { class: 'card' },
      el('p', {}, 'Id: ', el('span', { class: 'mono', id: 'tenant-id' }, t.id)),
      el('p', { class: 'muted' }, `Created ${t.created_at}${t.modified_at ? `, changed ${t.modified_at}` : ''}`),
      field('Name', name),
      el('label', {}, 'Settings'),
      boxes.map(([, box, label]) => el('label', { class: 'inline' }, box, label)),
      el('div', {},
        el('button', {
          id: 'tenant-save',
          onclick: async () => {
            const settings = Object.fromEntries(boxes.map(([key, box]) => [key, box.checked ? 'true' : 'false']));
            await put('/tenants/self', { name: name.value, settings });
            toast('Tenant saved.');
            fill(status, 'Saved.');
          },
        }, 'Save'), status)));
}
