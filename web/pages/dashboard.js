// @ts-check
// The dashboard: counts, dispatch lateness and the runs per day of a chosen range.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { field, errorBox } from '../lib/forms.js';
import { t } from '../i18n.js';

const DAY = 86400000;

/**
 * A date input of a UTC day.
 * @param {string} name
 * @param {number} ms
 */
const dayInput = (name, ms) => h('input', { name, id: `range-${name}`, type: 'date', value: new Date(ms).toISOString().slice(0, 10) });

/** @param {HTMLElement} root */
export async function dashboard(root) {
  const today = Date.now() - (Date.now() % DAY);
  const fromIn = dayInput('from', today - 13 * DAY);
  const toIn = dayInput('to', today);
  const out = h('div');
  const msg = h('div');
  let drawn = 0;
  const draw = async () => {
    // Filters fire quickly; only the newest request may render.
    const seq = ++drawn;
    msg.replaceChildren();
    const from = Date.parse(fromIn.value); const to = Date.parse(toIn.value) + DAY;
    let s;
    try { s = await api('GET', `/v1/stats?from=${from}&to=${to}`); } catch (e) { msg.replaceChildren(errorBox(e)); return; }
    if (seq !== drawn) return;
    /** @param {string} k @param {string | number} v */
    const card = (k, v) => h('div', { class: 'card' }, h('div', {}, t(k)), h('div', { class: 'stat', 'data-stat': k }, v));
    /** @typedef {{day: number, success: number, failed: number, killed: number, running: number, skipped: number}} Day */
    /** @type {Day[]} */
    const days = s.days;
    /** @param {'success' | 'failed' | 'killed' | 'running' | 'skipped'} k */
    const sum = (k) => days.reduce((a, d) => a + d[k], 0);
    const max = Math.max(1, ...days.map((d) => d.success + d.failed + d.killed + d.running));
    /** @param {Day} d */
    const bar = (d) => h('div', { class: 'bar', 'data-day': new Date(d.day).toISOString().slice(0, 10), title: `${new Date(d.day).toISOString().slice(0, 10)}: ${t('success')} ${d.success}, ${t('failed')} ${d.failed}, ${t('killed')} ${d.killed}, ${t('running')} ${d.running}` },
      h('small', {}, new Date(d.day).getUTCDate()),
      h('div', { class: 's', 'data-h': d.success }), h('div', { class: 'f', 'data-h': d.failed }), h('div', { class: 'k', 'data-h': d.killed }), h('div', { class: 'r', 'data-h': d.running }));
    const bars = h('div', { class: 'bars', id: 'chart' }, days.map(bar));
    // Heights through the CSSOM (style attributes would need 'unsafe-inline' under the CSP).
    // Percentages of the bar's column, less the day label: the chart fills its card at any size.
    for (const el of bars.querySelectorAll('[data-h]')) {
      const bit = /** @type {HTMLElement} */ (el);
      bit.style.height = `calc((100% - 16px) * ${Number(bit.dataset.h) / max})`;
    }
    const legend = h('div', { class: 'legend' }, h('span', { class: 'key s' }), t('success'), h('span', { class: 'key f' }), t('failed'), h('span', { class: 'key k' }), t('killed'), h('span', { class: 'key r' }), t('running'));
    out.replaceChildren(
      h('div', { class: 'cards' }, card('groups', s.groups), card('jobs', s.jobs), card('running_jobs', s.running_jobs),
        card('live_executors', s.executors), card('runs_in_range', sum('success') + sum('failed') + sum('killed') + sum('running') + sum('skipped')),
        card('success', sum('success')), card('failed', sum('failed')), card('killed', sum('killed')), card('running', sum('running')),
        card('lateness_now', s.lateness.current_seconds.toFixed(1)), card('lateness', s.lateness.mean_seconds.toFixed(3))),
      h('div', { class: 'card' }, h('h3', {}, t('runs_per_day')), legend, bars));
  };
  for (const el of [fromIn, toIn]) el.addEventListener('change', draw);
  // Presets: the last N days up to today (UTC days, as the chart counts them).
  /** @param {number} days @param {string} label */
  const preset = (days, label) => h('button', { type: 'button', id: `preset-${days}`, class: 'preset', onclick: () => {
    const now = Date.now() - (Date.now() % DAY);
    fromIn.value = new Date(now - (days - 1) * DAY).toISOString().slice(0, 10);
    toIn.value = new Date(now).toISOString().slice(0, 10);
    draw();
  } }, t(label));
  root.replaceChildren(h('h2', {}, t('dashboard')),
    h('div', { class: 'filters' }, preset(1, 'today'), preset(7, 'days_7'), preset(30, 'days_30'), field('from', fromIn), field('to', toIn), h('button', { type: 'button', id: 'refresh', onclick: draw }, t('refresh'))), msg, out);
  await draw();
}
