// @ts-check
// The runs list: filters asked of the server, pages below the last run shown, clearing old
// runs, and a refresh every 10 s that keeps both.
import { h, lines } from '../lib/dom.js';
import { api, groupsList } from '../lib/api.js';
import { me } from '../lib/session.js';
import { fmtTime, localMs } from '../lib/time.js';
import { sel, num, errorBox } from '../lib/forms.js';
import { autoRefresh, jobCache } from '../lib/widgets.js';
import { t } from '../i18n.js';

const STATUS = ['pending', 'running', 'success', 'failed', 'killed', 'skipped'];
const PAGE = 100;

/**
 * The job filter of the runs page: a search field whose suggestions the admin finds (by
 * description, handler or owner, 20 at a time), instead of a list of every job. `onpick`
 * gets the chosen job id, or '' when the field is cleared.
 * @param {string} initial
 * @param {(id: string) => void} onpick
 */
function jobPicker(initial, onpick) {
  const list = h('datalist', { id: 'job-choices' });
  const input = h('input', { name: 'job', type: 'search', list: 'job-choices', placeholder: t('search_job'), autocomplete: 'off', value: initial || '' });
  let picked = (/^#(\d+)/.exec(initial || '') || [])[1] || '';
  let asked = 0;
  input.addEventListener('input', async () => {
    const v = input.value.trim();
    const m = /^#(\d+)(\s|$)/.exec(v);
    // Only a picked job (`#id …`) filters; other text searches, and shows every job meanwhile.
    const id = m ? m[1] : '';
    if (id !== picked) { picked = id; onpick(id); }
    if (m || !v) return;
    const seq = ++asked;
    try {
      /** @type {any[]} */
      const found = await api('GET', `/v1/jobs?${new URLSearchParams({ q: v.slice(0, 200), limit: '20' })}`);
      if (seq === asked) list.replaceChildren(...found.map((j) => h('option', { value: `#${j.id} ${j.description}` })));
    } catch { /* suggestions only */ }
  });
  return { input, list, value: () => picked };
}

/**
 * `#runs`, `#runs/job/ID` (the runs of one job).
 * @param {HTMLElement} root
 * @param {string[]} args
 */
export async function runList(root, args) {
  const groups = await groupsList();
  const jobs = jobCache();
  const jobArg = args[0] === 'job' && /^\d+$/.test(args[1] || '') ? Number(args[1]) : null;
  if (jobArg) await jobs.load([jobArg]);
  /** @param {number} id */
  const jname = (id) => { const j = jobs.get(id); return j ? `#${id} ${j.description}` : `#${id}`; };
  const fg = sel('group_id', [['', `${t('group')}: ${t('all')}`], ...groups.map((g) => /** @type {[number, string]} */ ([g.id, g.app_name]))], '');
  const fj = jobPicker(jobArg ? jname(jobArg) : '', () => { draw(false); needScope(); });
  const fs = sel('status', [['', `${t('status')}: ${t('all')}`], ...STATUS.map((s) => /** @type {[string, string]} */ ([s, t(s)]))], '');
  // The range is on the scheduled time and filtered by the server, page by page.
  const ff = h('input', { name: 'from', type: 'datetime-local', step: '1', title: `${t('from')} (${t('time_range_note')})` });
  const ft = h('input', { name: 'to', type: 'datetime-local', step: '1', title: `${t('to')} (${t('time_range_note')})` });
  const body = h('tbody');
  const msg = h('div');
  const count = h('span', { id: 'run-count' });
  const more = h('button', { type: 'button', id: 'more-runs', hidden: true }, t('more'));
  /** @param {any} r */
  const row = (r) => {
    const j = jobs.get(r.job_id);
    return h('tr', { 'data-run': r.id }, h('td', {}, h('a', { href: `#runs/${r.id}` }, r.id)), h('td', { class: 'job' }, jname(r.job_id)),
      h('td', { class: 'at' }, fmtTime(r.scheduled_at, j ? j.time_zone : undefined)), h('td', {}, t(r.trigger_type)), h('td', {}, r.executor_address), h('td', { class: 'param' }, r.param),
      h('td', { class: `st-${r.status}` }, t(r.status)), h('td', { class: 'msg' }, lines(r.handle_msg)));
  };
  let drawn = 0;
  /** @type {number | undefined} */
  let last;
  /**
   * One page of runs, newest first, below the run id `before` when given.
   * @param {number} [before]
   * @param {number} [limit]
   * @returns {Promise<any[]>}
   */
  const page = (before, limit = PAGE) => {
    const q = new URLSearchParams({ limit: String(limit) });
    if (fg.value) q.set('group_id', fg.value);
    if (fj.value()) q.set('job_id', fj.value());
    if (fs.value) q.set('status', fs.value);
    const from = localMs(ff);
    const to = localMs(ft);
    if (from !== undefined) q.set('from', String(from));
    if (to !== undefined) q.set('to', String(to));
    if (before) q.set('before_id', String(before));
    return api('GET', `/v1/runs?${q}`);
  };
  /** @param {any[]} got @param {boolean} append @param {number} asked */
  const show = (got, append, asked) => {
    if (append) body.append(...got.map(row)); else body.replaceChildren(...got.map(row));
    count.textContent = `${body.children.length}`;
    // A full page may have more behind it; the next page starts below its last id.
    more.hidden = got.length < asked;
    if (got.length) last = got[got.length - 1].id;
  };
  // `keep`: an automatic refresh, which reloads as many runs as are shown, so neither the
  // filters nor the place the user scrolled to are lost.
  /** @param {boolean} keep */
  const draw = async (keep) => {
    // Filters fire quickly; only the newest request may render.
    const seq = ++drawn;
    const limit = keep ? Math.min(1000, Math.max(PAGE, body.children.length)) : PAGE;
    let got;
    try { got = await page(undefined, limit); await jobs.load(got.map((r) => r.job_id)); } catch (e) { if (seq === drawn) { msg.replaceChildren(errorBox(e)); body.replaceChildren(); count.textContent = '0'; more.hidden = true; } return; }
    if (seq !== drawn) return;
    msg.replaceChildren();
    show(got, false, limit);
  };
  more.addEventListener('click', async () => {
    const seq = drawn;
    let got;
    try { got = await page(last); await jobs.load(got.map((r) => r.job_id)); } catch (e) { msg.replaceChildren(errorBox(e)); return; }
    if (seq === drawn) show(got, true, PAGE);
  });
  for (const el of [fg, fs, ff, ft]) el.addEventListener('change', () => draw(false));
  const user = me();
  const days = h('input', { type: 'number', min: '0', value: '30', name: 'older_than_days' });
  const cleared = h('span', { id: 'cleared', class: 'ok' });
  const clear = h('button', { type: 'button', id: 'clear-runs', onclick: async () => {
    if (!confirm(t('confirm_clear'))) return;
    try { const r = await api('POST', '/v1/runs/clear', { older_than_days: Number(days.value), group_id: num(fg.value), job_id: num(fj.value()) }); cleared.textContent = `${t('deleted')}: ${r.deleted}`; draw(false); } catch (e) { msg.replaceChildren(errorBox(e)); }
  } }, t('clear'));
  // Users (not admins) clear runs of one group or job at a time: say so instead of failing.
  const scopeNote = h('span', { id: 'clear-note', class: 'note' }, t('clear_needs_scope'));
  const needScope = () => { const none = !user.admin && !fg.value && !fj.value(); clear.disabled = none; scopeNote.hidden = !none; };
  fg.addEventListener('change', needScope);
  needScope();
  root.replaceChildren(h('h2', {}, t('runs')), h('div', { class: 'filters' }, fg, fj.input, fj.list, fs,
    h('label', {}, h('span', {}, t('from')), ff), h('label', {}, h('span', {}, t('to')), ft),
    h('button', { type: 'button', onclick: () => draw(false) }, t('refresh')), h('span', {}, `${t('shown')}: `, count), h('span', { class: 'note' }, t('auto_refresh'))),
  user.can_write ? h('div', { class: 'filters' }, t('clear_old'), days, clear, scopeNote, cleared) : '', msg,
  h('table', { id: 'runs' }, h('thead', {}, h('tr', {}, ['#', t('job'), t('scheduled'), t('trigger_type'), t('address'), t('param'), t('status'), t('handle_msg')].map((x) => h('th', {}, x)))), body),
  more);
  await draw(false);
  autoRefresh(root, draw);
}
