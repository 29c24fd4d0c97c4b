// @ts-check
// The jobs list: filters, sorting and pages by the server, and each row's actions.
import { h } from '../lib/dom.js';
import { api, options, groupsList } from '../lib/api.js';
import { me, mayOperate, mayEdit } from '../lib/session.js';
import { go } from '../lib/nav.js';
import { fmtTime } from '../lib/time.js';
import { field, sel, errorBox, optName } from '../lib/forms.js';
import { scheduleText, calendarTag } from '../lib/schedule.js';
import { actionMenu, autoRefresh } from '../lib/widgets.js';
import { t } from '../i18n.js';

const JOB_PAGE = 50;
/** A running FIX_DELAY job's next fire while its run is under way (9999-12-31T23:59:59.999Z). */
const WAITING_FOR_RUN_END = 253402300799999;

/**
 * "Run once": the parameter of this run and, optionally, the executor to send it to (by
 * default the job's route strategy picks one). Resolves to the body to send, or null.
 * @param {any} j the job
 * @returns {Promise<{param: string, address?: string, trigger_type: string} | null>}
 */
async function runOnceDialog(j) {
  /** @type {any[]} */
  let live = [];
  try { live = ((await api('GET', `/v1/executors?group=${j.group_id}`))[0] || { executors: [] }).executors; } catch { /* the route strategy still works */ }
  return new Promise((resolve) => {
    const param = h('textarea', { name: 'param', rows: '3', value: j.param || '' });
    // A manual address that did not answer the admin's `/beat` is offered, marked: the run
    // would fail on it.
    const addr = sel('address', [['', t('address_auto')], ...live.map((e) => /** @type {[string, string]} */ ([e.address, e.answers === false ? `${e.address} (${t('address_silent')})` : e.address]))], '');
    for (const o of addr.querySelectorAll('option')) {
      const e = live.find((x) => x.address === o.value);
      if (e && e.answers != null) o.dataset.answers = String(e.answers);
    }
    const dlg = h('dialog', { id: 'run-once', class: 'card' });
    /** @param {{param: string, address?: string, trigger_type: string} | null} v */
    const done = (v) => { dlg.close(); dlg.remove(); resolve(v); };
    dlg.append(h('form', { method: 'dialog', onsubmit: (/** @type {Event} */ ev) => { ev.preventDefault(); done({ param: param.value, address: addr.value || undefined, trigger_type: 'MANUAL' }); } },
      h('h3', {}, `${t('run_once')} — #${j.id} ${j.description}`),
      field('param_prompt', param), field('address', addr),
      h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('run')), h('button', { type: 'button', onclick: () => done(null) }, t('cancel')))));
    dlg.addEventListener('cancel', () => done(null));
    document.body.append(dlg);
    dlg.showModal();
  });
}

/**
 * What the user chose in the list: filters, sort and page.
 * @typedef {{group: string, status: string, handler: string, description: string, owner: string, sort: string, desc: boolean, offset: number}} ListState
 */

/**
 * The list's state kept in the browser's history entry: switching zone or language draws the
 * page again, and a reload or Back returns to it, with the list as the user left it. A new
 * visit (a link, a saved form) is a new entry, and starts afresh.
 * @returns {Partial<ListState>}
 */
const keptState = () => (history.state && history.state.jobs) || {};

/** @param {ListState} st */
const keepState = (st) => history.replaceState({ ...(history.state || {}), jobs: st }, '');

/** @param {HTMLElement} root */
export async function jobList(root) {
  const kept = keptState();
  const groups = await groupsList();
  // The enum names of the rows (a GLUE job's type) come from the admin's values.
  await options();
  const user = me();
  const fg = sel('group', [['', `${t('group')}: ${t('all')}`], ...groups.map((g) => /** @type {[number, string]} */ ([g.id, g.app_name]))], kept.group || '');
  const fs = sel('status', [['', `${t('status')}: ${t('all')}`], ['true', t('started')], ['false', t('stopped')]], kept.status || '');
  const fh = h('input', { name: 'handler', type: 'search', placeholder: t('handler'), value: kept.handler || '' });
  const fd = h('input', { name: 'description', type: 'search', placeholder: t('description'), value: kept.description || '' });
  const fo = h('input', { name: 'owner', type: 'search', placeholder: t('owner'), value: kept.owner || '' });
  const body = h('tbody');
  const msg = h('div');
  const pageNo = h('span', { id: 'job-page' });
  const prev = h('button', { type: 'button', id: 'jobs-prev' }, t('prev'));
  const next = h('button', { type: 'button', id: 'jobs-next' }, t('next'));
  /** @param {number} id */
  const gname = (id) => (groups.find((g) => g.id === id) || {}).app_name || id;
  let offset = kept.offset || 0;
  let sort = kept.sort || 'id';
  let desc = !!kept.desc;
  let drawn = 0;
  /** @param {() => Promise<unknown>} fn */
  const act = (fn) => async () => { try { await fn(); draw(true); } catch (e) { msg.replaceChildren(errorBox(e)); } };
  /** @param {any} j whether it is paused now (a pause whose end passed is over) */
  const paused = (j) => j.running && j.paused_until > Date.now();
  /** @param {any} j asks for how long, then pauses it */
  const pause = async (j) => {
    const hours = Number(prompt(t('pause_hours'), '1'));
    if (!(hours > 0)) return;
    await api('POST', `/v1/jobs/${j.id}/pause`, { until: Date.now() + Math.round(hours * 3600_000) });
  };
  /** @param {any} j */
  const status = (j) => (paused(j)
    ? h('td', { class: 'status paused' }, `⏸ ${t('paused_until')} ${fmtTime(j.paused_until, j.time_zone)}`)
    : h('td', { class: j.running ? 'status ok' : 'status' }, j.running ? `▶ ${t('started')}` : `■ ${t('stopped')}`));
  /** @param {any} j */
  const row = (j) => h('tr', { 'data-job': j.id },
    h('td', {}, j.id), h('td', {}, gname(j.group_id)), h('td', { class: 'desc' }, j.description), h('td', { class: 'owner' }, j.owner),
    h('td', { class: 'schedule' }, scheduleText(j), calendarTag(j)),
    h('td', {}, j.glue_type === 'BEAN' ? j.handler : optName('glue', j.glue_type)), status(j),
    h('td', { class: 'next-fire' }, !j.running || !(j.next_fire_at > 0) ? '' : j.next_fire_at >= WAITING_FOR_RUN_END ? t('after_run_ends') : fmtTime(j.next_fire_at, j.time_zone)),
    h('td', { class: 'row-actions' }, h('a', { href: `#runs/job/${j.id}`, class: 'job-runs', title: t('job_runs') }, t('runs')), ' ', mayOperate(j.group_id) ? actionMenu([
      // A job without a schedule never fires by itself: there is nothing to start.
      j.running ? ['stop', act(() => api('POST', `/v1/jobs/${j.id}/stop`))] : j.schedule_type === 'NONE' ? null : ['start', act(() => api('POST', `/v1/jobs/${j.id}/start`))],
      paused(j) ? ['resume', act(() => api('POST', `/v1/jobs/${j.id}/resume`))] : j.running ? ['pause', act(() => pause(j))] : null,
      ['run_once', act(async () => { const b = await runOnceDialog(j); if (b) { const r = await api('POST', `/v1/jobs/${j.id}/trigger`, b); go(`#runs/${r.run_id}`); } })],
      // Only a schedule with fire times has past ones to run again.
      j.schedule_type === 'CRON' || j.schedule_type === 'FIX_RATE' ? ['backfill', () => go(`#backfills/${j.id}`)] : null,
      // Operators run jobs; editing them is for editors.
      mayEdit(j.group_id) ? ['edit', () => go(`#jobs/edit/${j.id}`)] : null,
      mayEdit(j.group_id) ? ['copy', () => go(`#jobs/copy/${j.id}`)] : null,
      user.admin && j.glue_type !== 'BEAN' ? ['script', () => go(`#script/${j.id}`)] : null,
      mayEdit(j.group_id) ? ['remove', act(async () => { if (confirm(t('confirm_delete'))) await api('DELETE', `/v1/jobs/${j.id}`); })] : null,
    ]) : ''));
  // The server filters, sorts and pages; one more job than a page says whether a next one exists.
  /** @param {boolean} keep an automatic refresh or a page turn: the page stays */
  const draw = async (keep) => {
    const seq = ++drawn;
    if (!keep) offset = 0;
    const q = new URLSearchParams({ sort, order: desc ? 'desc' : 'asc', offset: String(offset), limit: String(JOB_PAGE + 1) });
    if (fg.value) q.set('group_id', fg.value);
    if (fs.value) q.set('running', fs.value);
    for (const [k, el] of /** @type {Array<[string, HTMLInputElement]>} */ ([['handler', fh], ['description', fd], ['owner', fo]])) if (el.value.trim()) q.set(k, el.value.trim());
    /** @type {any[]} */
    let got;
    try { got = await api('GET', `/v1/jobs?${q}`); } catch (e) { if (seq === drawn) msg.replaceChildren(errorBox(e)); return; }
    if (seq !== drawn) return;
    // A kept page past the end (jobs were removed since): the first page instead.
    if (!got.length && offset > 0) { offset = 0; return draw(true); }
    keepState({ group: fg.value, status: fs.value, handler: fh.value, description: fd.value, owner: fo.value, sort, desc, offset });
    msg.replaceChildren();
    body.replaceChildren(...got.slice(0, JOB_PAGE).map(row));
    prev.disabled = offset === 0; next.disabled = got.length <= JOB_PAGE;
    pageNo.textContent = `${t('page')} ${offset / JOB_PAGE + 1}`;
  };
  prev.addEventListener('click', () => { offset = Math.max(0, offset - JOB_PAGE); draw(true); });
  next.addEventListener('click', () => { offset += JOB_PAGE; draw(true); });
  for (const el of [fg, fs, fh, fd, fo]) el.addEventListener('input', () => draw(false));
  // Column headers that sort: click once ascending, again descending.
  /** @param {string} label @param {string} [key] */
  const th = (label, key) => {
    if (!key) return h('th', {}, label);
    return h('th', { class: 'sortable', 'data-sort': key, 'aria-sort': sort === key ? (desc ? 'descending' : 'ascending') : null },
      h('button', { type: 'button', class: 'link', onclick: () => { if (sort === key) desc = !desc; else { sort = key; desc = false; } mark(); draw(false); } }, label, h('span', { class: 'arrow' })));
  };
  const head = h('tr', {}, th('#', 'id'), th(t('group'), 'group_id'), th(t('description'), 'description'), th(t('owner'), 'owner'), th(t('schedule')),
    th(t('handler'), 'handler'), th(t('status')), th(t('next_fire'), 'next_fire_at'), th(''));
  const mark = () => {
    for (const c of head.querySelectorAll('th.sortable')) {
      const on = /** @type {HTMLElement} */ (c).dataset.sort === sort;
      if (on) c.setAttribute('aria-sort', desc ? 'descending' : 'ascending'); else c.removeAttribute('aria-sort');
      const arrow = c.querySelector('.arrow');
      if (arrow) arrow.textContent = on ? (desc ? ' ▼' : ' ▲') : '';
    }
  };
  mark();
  root.replaceChildren(h('h2', {}, t('jobs')), h('div', { class: 'filters' }, fg, fs, fh, fd, fo,
    groups.some((g) => mayEdit(g.id)) ? h('button', { id: 'new-job', type: 'button', onclick: () => go('#jobs/new') }, t('add')) : '',
    h('span', { class: 'note' }, t('auto_refresh'))), msg,
  h('table', { id: 'jobs' }, h('thead', {}, head), body),
  h('div', { class: 'pager' }, prev, pageNo, next));
  await draw(true);
  autoRefresh(root, draw);
}
