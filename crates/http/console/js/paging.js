// What several pages share: a pager under a list and a second press that confirms.

import { el } from '/console/js/dom.js';

/** "Page n of m" with previous and next buttons calling `load(page)`. */
export function pager(pagination, load) {
  if (!pagination || pagination.total_pages <= 1) return null;
  const { page_number: n, total_pages: m, total_items: total } = pagination;
  return el('div', { class: 'pager' },
    el('button', { class: 'quiet', disabled: n <= 1, onclick: () => load(n - 1) }, 'Previous'),
    ` Page ${n} of ${m} (${total}) `,
    el('button', { class: 'quiet', disabled: n >= m, onclick: () => load(n + 1) }, 'Next'));
}

const armed = new Map();

/** True on the second call with `what` within five seconds: a destructive button pressed twice. */
export function confirmed(what) {
  const now = Date.now();
  const first = armed.get(what);
  if (first && now - first < 5000) {
    armed.delete(what);
    return true;
  }
  armed.set(what, now);
  return false;
}
