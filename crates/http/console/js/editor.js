// A code editor: a textarea over a highlighted copy of its text (spans built as text nodes).

import { el } from '/console/js/dom.js';

const KEYWORDS = new Set(('async await break case catch class const continue default delete do else export extends false ' +
  'finally for function if import in instanceof let new null return switch this throw true try typeof undefined var void while yield').split(' '));

// Comments, strings (three quotes), numbers, words: one pass, each match a token.
const TOKEN = /(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|('(?:\\.|[^'\\\n])*'?|"(?:\\.|[^"\\\n])*"?|`(?:\\[\s\S]|[^`\\])*`?)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b)|([A-Za-z_$][\w$]*)/g;

/** The highlighted spans of `code`, as nodes. */
export function highlight(code) {
  const out = [];
  let at = 0;
  for (const match of code.matchAll(TOKEN)) {
    if (match.index > at) out.push(document.createTextNode(code.slice(at, match.index)));
    const [text, comment, string, number, word] = match;
    let cls = null;
    if (comment) cls = 'tok-com';
    else if (string) cls = 'tok-str';
    else if (number) cls = 'tok-num';
    else if (word && KEYWORDS.has(word)) cls = 'tok-kw';
    else if (word && code[match.index + text.length] === '(') cls = 'tok-fn';
    out.push(cls ? el('span', { class: cls }, text) : document.createTextNode(text));
    at = match.index + text.length;
  }
  if (at < code.length) out.push(document.createTextNode(code.slice(at)));
  // A trailing newline needs a line after it to be seen.
  out.push(document.createTextNode('\n'));
  return out;
}

/** An editor holding `code`; `.value` reads and sets its text. */
export function editor(id, code) {
  const shown = el('pre', { 'aria-hidden': 'true' });
  const input = el('textarea', { id, spellcheck: 'false', autocomplete: 'off', wrap: 'off' });
  const box = el('div', { class: 'editor' }, shown, input);
  const paint = () => {
    shown.replaceChildren(...highlight(input.value));
    shown.scrollTop = input.scrollTop;
    shown.scrollLeft = input.scrollLeft;
  };
  input.addEventListener('input', paint);
  input.addEventListener('scroll', () => { shown.scrollTop = input.scrollTop; shown.scrollLeft = input.scrollLeft; });
  input.addEventListener('keydown', (event) => {
    if (event.key !== 'Tab') return;
    event.preventDefault();
    input.setRangeText('  ', input.selectionStart, input.selectionEnd, 'end');
    paint();
  });
  input.value = code;
  paint();
  return {
    node: box,
    get value() { return input.value; },
    set value(text) { input.value = text; paint(); },
  };
}
