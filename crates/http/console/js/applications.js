// Applications: list, create with permissions and rules (the key shown once), regenerate, delete.

import { del, get, post } from '/console/js/api.js';
import { el, field, fill, parseJson, table, toast } from '/console/js/dom.js';
import { confirmed, pager } from '/console/js/paging.js';

const TYPES = ['private', 'public', 'management'];
const RULES_HINT = '[{"description": "cards, masked", "priority": 1, "container": "/pci/", "transform": "mask", "permissions": ["token:read"]}]';

function keyOnce(title, app) {
  return el('div', { class: 'once', id: 'key-once' },
    el('strong', {}, title), el('br'),
    'Copy it now: the vault keeps only its hash and will not show it again.', el('br'),
    el('span', { class: 'mono', id: 'new-key' }, app.key));
}

export async function render(view, page = 1) {
  const list = el('div', { id: 'application-list' });
  const shown = el('div');
  const type = el('select', { id: 'app-type' }, TYPES.map((t) => el('option', { value: t }, t)));
  const name = el('input', { type: 'text', id: 'app-name', placeholder: 'checkout-backend' });
  const perms = el('div', { class: 'perms', id: 'app-permissions' });
  const rules = el('textarea', { id: 'app-rules', placeholder: RULES_HINT });
  const showPermissions = async () => {
    const known = await get(`/permissions?application_type=${encodeURIComponent(type.value)}`);
    fill(perms, known.map((p) => el('label', { class: 'inline', title: p.description },
      el('input', { type: 'checkbox', value: p.type, 'data-permission': p.type }), p.type)));
  };
  type.addEventListener('change', showPermissions);
  const create = async () => {
    const body = {
      name: name.value,
      type: type.value,
      permissions: [...perms.querySelectorAll('input:checked')].map((b) => b.value),
      rules: parseJson(rules.value, 'rules', []),
    };
    const app = await post('/applications', body);
    fill(shown, keyOnce(`Application "${app.name}" created. Its key:`, app));
    name.value = '';
    rules.value = '';
    await load(page);
  };
  const load = async (number) => {
    page = number;
    const result = await get(`/applications?page=${number}&size=20`);
    fill(list, table([
      ['Name', (a) => a.name],
      ['Type', (a) => a.type],
      ['Permissions', (a) => a.permissions.join(', ')],
      ['Rules', (a) => String((a.rules || []).length)],
      ['Id', (a) => a.id, 'mono'],
      ['', (a) => [
        el('button', { class: 'quiet', onclick: async () => {
          if (!confirmed(`regenerate-${a.id}`)) return toast('Press Regenerate again to confirm: the old key stops working at once.');
          const fresh = await post(`/applications/${a.id}/regenerate`);
          fill(shown, keyOnce(`New key for "${a.name}" (the old one no longer works):`, fresh));
        } }, 'Regenerate'),
        el('button', { class: 'danger', onclick: async () => {
          if (!confirmed(`delete-${a.id}`)) return toast('Press Delete again to confirm.');
          await del(`/applications/${a.id}`);
          toast('Application deleted.');
          await load(page);
        } }, 'Delete')]],
    ], result.data), pager(result.pagination, load));
  };
  fill(view,
    el('h1', {}, 'Applications'),
    shown,
    el('section', { class: 'card' },
      el('h2', {}, 'New application'),
      el('div', { class: 'row' }, field('Name', name), field('Type', type)),
      el('label', {}, 'Permissions'), perms,
      field('Access rules (JSON list, optional)', rules),
      el('button', { id: 'app-create', onclick: create }, 'Create')),
    list);
  await showPermissions();
  await load(page);
}
