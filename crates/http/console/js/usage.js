// The usage report as charts: monthly active tokens over the last twelve months, tokens by type.

import { get } from '/console/js/api.js';
import { el, fill } from '/console/js/dom.js';

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

/** Bars of `[label, value]`, labels under them, values above. */
function bars(id, points, width = 640, height = 220) {
  const chart = svg('svg', { class: 'chart', id, viewBox: `0 0 ${width} ${height}`, width, height, role: 'img' });
  const top = Math.max(1, ...points.map(([, v]) => v));
  const slot = (width - 40) / Math.max(points.length, 1);
  const base = height - 30;
  chart.append(svg('line', { x1: 30, y1: base, x2: width - 5, y2: base }));
  points.forEach(([label, value], i) => {
    const h = ((base - 20) * value) / top;
    const x = 35 + i * slot;
    chart.append(svg('rect', { class: 'bar', x: x + slot * 0.15, y: base - h, width: slot * 0.7, height: h }));
    chart.append(svg('text', { x: x + slot / 2, y: base - h - 4, 'text-anchor': 'middle' }, value));
    chart.append(svg('text', { x: x + slot / 2, y: base + 16, 'text-anchor': 'middle' }, label));
  });
  return chart;
}

export async function render(view) {
  const report = await get('/tenants/self/reports/usage?months=12');
  const t = report.token_report;
  const types = Object.entries(t.metrics_by_type).map(([type, m]) => [type, m.count]);
  const months = (report.monthly_active_tokens_by_month || []).map((m) => [m.month.slice(2), m.monthly_active_tokens]);
  fill(view,
    el('h1', {}, 'Usage'),
    el('section', { class: 'card' },
      el('p', { id: 'usage-mat' }, `Monthly active tokens this month: ${t.monthly_active_tokens} of ${t.included_monthly_active_tokens} included.`),
      el('h2', {}, 'Monthly active tokens, last twelve months'), bars('chart-months', months),
      el('h2', {}, 'Live tokens by type'),
      types.length ? bars('chart-types', types) : el('p', { class: 'muted' }, 'No live tokens.')));
}
