// Building the page: every value goes in as text (a text node or an attribute), never as HTML.

/** An element with attributes (`on…` as listeners, `class`) and children (strings as text). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (name === 'class') node.className = value;
    else if (name === 'value') node.value = value;
    else if (name === 'checked') node.checked = Boolean(value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  add(node, children);
  return node;
}

/** Appends children: nodes as they are, anything else as text. */
export function add(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** Empties `node` and fills it with `children`. */
export function fill(node, ...children) {
  node.replaceChildren();
  return add(node, children);
}

/** A table of `rows` with `columns`: [heading, row => cell content]. */
export function table(columns, rows, empty = 'Nothing yet.') {
  if (!rows.length) return el('p', { class: 'muted' }, empty);
  return el('table', {},
    el('thead', {}, el('tr', {}, columns.map(([heading]) => el('th', {}, heading)))),
    el('tbody', {}, rows.map((row) => el('tr', {}, columns.map(([, cell, cls]) => el('td', { class: cls }, cell(row)))))));
}

/** A short message in the corner; `bad` for errors. */
export function toast(message, bad = false) {
  const box = document.getElementById('toast');
  const line = el('div', { class: bad ? 'bad' : '' }, message);
  box.append(line);
  setTimeout(() => line.remove(), bad ? 8000 : 3500);
}

/** JSON text for a `<pre>` or a textarea. */
export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

/** Parses a textarea's JSON; empty text is `fallback`; throws a message naming `field`. */
export function parseJson(text, field, fallback) {
  if (!text.trim()) return fallback;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${field}: not valid JSON (${e.message})`);
  }
}

/** A labelled field. */
export function field(label, input) {
  return el('div', {}, el('label', {}, label), input);
}
