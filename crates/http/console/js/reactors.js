// Reactor formulas (code in an editor, a dry run of it) and the reactors made of them.

import { del, get, post, put } from '/console/js/api.js';
import { el, field, fill, parseJson, pretty, table, toast } from '/console/js/dom.js';
import { editor } from '/console/js/editor.js';
import { confirmed } from '/console/js/paging.js';

const SAMPLE = `module.exports = async function (req) {
  const { card } = req.args;
  console.log('charging', req.configuration.merchant);
  return { raw: { last4: String(card).slice(-4) } };
};
`;

/** What a dry run answered, as lines of text. */
function showRun(out, run) {
  const lines = [];
  if (run.error) {
    const e = run.error;
    lines.push(el('div', { class: 'level-error', id: 'dry-run-error' },
      `Error (${e.kind}, an invocation would answer ${e.status})${e.line ? ` at line ${e.line}` : ''}: ${e.message || ''}`));
    if (e.errors !== undefined) lines.push(el('div', {}, `errors: ${pretty(e.errors)}`));
    if (e.body !== undefined) lines.push(el('div', {}, `response: ${pretty({ headers: e.headers, body: e.body })}`));
  } else {
    lines.push(el('div', { id: 'dry-run-result' }, `raw: ${pretty(run.raw === undefined ? null : run.raw)}`));
    if (run.tokenize !== undefined) lines.push(el('div', {}, `tokenize (shown, not tokenized): ${pretty(run.tokenize)}`));
  }
  lines.push(el('div', { class: 'muted' }, run.console.length ? '— console —' : '— no console output —'));
  for (const line of run.console) lines.push(el('div', { class: `level-${line.level}` }, `[${line.level}] ${line.message}`));
  fill(out, lines);
}

async function formulaEditor(view, formula, reload) {
  const name = el('input', { type: 'text', id: 'formula-name', value: formula ? formula.name : '' });
  const code = editor('formula-code', formula ? formula.code : SAMPLE);
  const configuration = el('textarea', { id: 'formula-configuration' }, pretty(formula ? formula.configuration : [{ name: 'merchant', type: 'string' }]));
  const parameters = el('textarea', { id: 'formula-parameters' }, pretty(formula ? formula.request_parameters : [{ name: 'card', type: 'string', optional: false }]));
  const args = el('textarea', { id: 'dry-run-args' }, pretty({ card: '4242424242424242' }));
  const sampleConfig = el('textarea', { id: 'dry-run-configuration' }, pretty({ merchant: 'm-42' }));
  const out = el('pre', { class: 'out', id: 'dry-run-output' }, 'Run the code to see what it returns.');
  const save = async () => {
    const body = {
      name: name.value,
      type: 'private',
      code: code.value,
      configuration: parseJson(configuration.value, 'configuration', []),
      request_parameters: parseJson(parameters.value, 'request parameters', []),
    };
    const saved = formula ? await put(`/reactor-formulas/${formula.id}`, body) : await post('/reactor-formulas', body);
    toast(`Formula saved (${saved.status || 'not checked'}).`);
    formula = saved; // later saves replace it
    fill(heading, `Formula "${saved.name}"`);
    fill(saveButton, 'Save');
    await reload();
  };
  const dryRun = async () => {
    fill(out, 'Running…');
    const run = await post('/reactor-formulas/dry-run', {
      code: code.value,
      args: parseJson(args.value, 'arguments', {}),
      configuration: parseJson(sampleConfig.value, 'configuration', {}),
    });
    showRun(out, run);
  };
  const heading = el('h2', {}, formula ? `Formula "${formula.name}"` : 'New formula');
  const saveButton = el('button', { id: 'formula-save', onclick: save }, formula ? 'Save' : 'Create');
  fill(view,
    heading,
    field('Name', name),
    el('label', { for: 'formula-code' }, 'Code'), code.node,
    el('div', { class: 'row' }, field('Configuration declared (JSON)', configuration), field('Request parameters (JSON)', parameters)),
    saveButton,
    el('h2', {}, 'Dry run'),
    el('p', { class: 'muted' }, 'Runs the code above once in the sandbox, as a reactor would: nothing is stored, no token is read ({{ }} expressions stay as they are), req.svc is null.'),
    el('div', { class: 'row' }, field('Arguments (req.args)', args), field('Configuration (req.configuration)', sampleConfig)),
    el('button', { id: 'dry-run', onclick: dryRun }, 'Dry run'),
    out);
}

export async function render(view) {
  const formulas = el('div', { id: 'formula-list' });
  const reactors = el('div', { id: 'reactor-list' });
  const editing = el('section', { class: 'card', id: 'formula-editor' });
  const newReactor = el('section', { class: 'card' });
  const load = async () => {
    const [f, r] = await Promise.all([get('/reactor-formulas?size=100'), get('/reactors?size=100')]);
    fill(formulas, table([
      ['Name', (x) => x.name],
      ['Status', (x) => x.status || '—'],
      ['Id', (x) => x.id, 'mono'],
      ['', (x) => [
        el('button', { class: 'quiet', onclick: () => formulaEditor(editing, x, load) }, 'Edit'),
        el('button', { class: 'danger', onclick: async () => {
          if (!confirmed(`formula-${x.id}`)) return toast('Press Delete again to confirm.');
          await del(`/reactor-formulas/${x.id}`);
          await load();
        } }, 'Delete')]],
    ], f.data));
    fill(reactors, table([
      ['Name', (x) => x.name],
      ['Formula', (x) => x.formula && x.formula.name],
      ['Application', (x) => (x.application ? x.application.name : '—')],
      ['Id', (x) => x.id, 'mono'],
      ['', (x) => el('button', { class: 'danger', onclick: async () => {
        if (!confirmed(`reactor-${x.id}`)) return toast('Press Delete again to confirm.');
        await del(`/reactors/${x.id}`);
        await load();
      } }, 'Delete')],
    ], r.data));
    const rname = el('input', { type: 'text', id: 'reactor-name' });
    const pick = el('select', { id: 'reactor-formula' }, f.data.map((x) => el('option', { value: x.id }, x.name)));
    const rconfig = el('textarea', { id: 'reactor-configuration' }, '{}');
    const rapp = el('input', { type: 'text', id: 'reactor-application', placeholder: 'optional application id' });
    fill(newReactor, el('h2', {}, 'New reactor'),
      el('div', { class: 'row' }, field('Name', rname), field('Formula', pick), field('Application id', rapp)),
      field('Configuration (JSON)', rconfig),
      el('button', { id: 'reactor-create', onclick: async () => {
        const body = { name: rname.value, formula: { id: pick.value }, configuration: parseJson(rconfig.value, 'configuration', {}) };
        if (rapp.value.trim()) body.application = { id: rapp.value.trim() };
        await post('/reactors', body);
        toast('Reactor created.');
        await load();
      } }, 'Create'));
  };
  fill(view,
    el('h1', {}, 'Reactors'),
    el('h2', {}, 'Formulas'), formulas,
    el('button', { id: 'formula-new', onclick: () => formulaEditor(editing, null, load) }, 'New formula'),
    editing,
    el('h2', {}, 'Reactors'), reactors,
    newReactor);
  await formulaEditor(editing, null, load);
  await load();
}
