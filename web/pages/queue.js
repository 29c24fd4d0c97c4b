// @ts-check
// The queue (every user): the limits on running runs, each with its runs running and waiting
// (administrators set a limit's maximum, add limits and delete them), and the runs waiting for
// a slot in the order they will go, with "Run now" and "Cancel" for operators of their group.
// It refreshes itself every 5 s; a maximum being edited is left as the user typed it.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { me, mayOperate } from '../lib/session.js';
import { fmtTime } from '../lib/time.js';
import { errorBox, showError, clearErrors, sel } from '../lib/forms.js';
import { autoRefresh } from '../lib/widgets.js';
import { LIMIT_KINDS, splitLimitName, limitName, limitPath, fullness, loadText, limitSpec, queueState, priorityNow, fmtWait, mayRefreshInput } from '../lib/flow.js';
import { t } from '../i18n.js';

/** @typedef {import('../lib/flow.js').Limit} Limit */
/** @typedef {import('../lib/flow.js').QueuedRun} QueuedRun */
/** @typedef {import('../lib/flow.js').LimitKind} LimitKind */

const REFRESH_MS = 5000;

/**
 * The admins' form that adds a limit: its kind, what it names (a key, a group picked by app
 * name, an executor's address, each suggested) and its maximum. `saved` is called after a save.
 * @param {HTMLElement} msg where errors the form cannot place go
 * @param {() => unknown} saved
 */
function addLimitForm(msg, saved) {
  const kind = /** @type {HTMLSelectElement} */ (sel('limit_kind', LIMIT_KINDS.map((k) => /** @type {[string, string]} */ ([k, t(`limit_kind_${k}`)])), 'key'));
  const suggestions = h('datalist', { id: 'limit-names' });
  const value = h('input', { name: 'name', required: true, list: 'limit-names', autocomplete: 'off', spellcheck: 'false', maxlength: 190 });
  const max = h('input', { name: 'max_running', type: 'number', required: true, min: 1, max: 1000000, step: 1, value: '1' });
  /** @type {Record<string, string[]>} */
  const known = { key: [], group: [], executor: [] };
  const hint = () => {
    value.placeholder = t(`limit_hint_${kind.value}`);
    suggestions.replaceChildren(...(known[kind.value] || []).map((v) => h('option', { value: v })));
  };
  kind.addEventListener('change', hint);
  hint();
  // Suggestions only: the app names of the groups and the addresses of their executors.
  api('GET', '/v1/executors').then((/** @type {any[]} */ groups) => {
    known.group = groups.map((g) => String(g.app_name));
    known.executor = [...new Set(groups.flatMap((g) => (g.executors || []).map((/** @type {any} */ e) => String(e.address))))];
    hint();
  }).catch(() => {});
  const form = h('form', { id: 'limit-form', class: 'filters', onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    clearErrors(form); msg.replaceChildren();
    const name = limitName(/** @type {LimitKind} */ (kind.value), value.value);
    try {
      await api('PUT', limitPath(name), { max_running: Number(max.value) });
      value.value = '';
      saved();
    } catch (e) { showError(form, msg, e); }
  } },
  h('label', {}, h('span', {}, t('limit_kind')), kind),
  h('label', {}, h('span', {}, t('limit_name')), value, suggestions),
  h('label', {}, h('span', {}, t('max_running')), max),
  h('button', { type: 'submit', id: 'add-limit' }, t('add_limit')));
  return form;
}

/** @param {HTMLElement} root */
export async function queue(root) {
  const admin = me().admin;
  const msg = h('div', { id: 'queue-msg' });
  const loadMsg = h('div');
  const limitBody = h('tbody');
  const queueBody = h('tbody');
  const count = h('span', { id: 'queue-count' });
  /**
   * The limits' rows by name, kept across refreshes so an input being edited stays as it is.
   * @type {Map<string, {row: HTMLTableRowElement, load: HTMLElement, queued: HTMLElement, input: HTMLInputElement | null, shown: string}>}
   */
  const limitRows = new Map();
  /** The limits as last listed, by name: an edited maximum keeps the rest of its rule. @type {Map<string, import('../lib/flow.js').Limit>} */
  const current = new Map();
  let drawn = 0;

  /**
   * Calls the API for a button; says `done` (when given) or why it failed, and draws the lists again.
   * @param {() => Promise<unknown>} fn
   * @param {string} [done]
   */
  const act = async (fn, done) => {
    msg.replaceChildren();
    try {
      await fn();
      if (done) msg.replaceChildren(h('p', { class: 'ok', role: 'status' }, done));
    } catch (e) { msg.replaceChildren(errorBox(e)); }
    await draw();
  };

  /** @param {Limit} l */
  const newLimitRow = (l) => {
    const { kind } = splitLimitName(l.name);
    const load = h('td', { class: 'load' });
    const queued = h('td', { class: 'queued' });
    /** @type {HTMLInputElement | null} */
    let input = null;
    /** @type {HTMLElement | string} */
    let edit = '';
    if (admin) {
      input = h('input', { name: 'max_running', type: 'number', min: 1, max: 1000000, step: 1, required: true, value: String(l.max_running ?? ''), 'aria-label': `${t('max_running')}: ${l.name}` });
      const field = input;
      const form = h('form', { class: 'limit-max', onsubmit: (/** @type {Event} */ ev) => {
        ev.preventDefault();
        act(async () => {
          await api('PUT', limitPath(l.name), limitSpec(current.get(l.name) ?? l, Number(field.value)));
          // Saved: the next refresh may show the admin's value again.
          entry.shown = field.value;
        });
      } }, field, h('button', { type: 'submit', class: 'set-limit' }, t('save')));
      edit = h('td', { class: 'row-actions' }, form, ' ', h('button', { type: 'button', class: 'delete-limit', onclick: () => {
        if (!confirm(t('confirm_delete_limit').replace('{name}', l.name))) return;
        act(() => api('DELETE', limitPath(l.name)));
      } }, t('remove')));
    }
    const row = h('tr', { 'data-limit': l.name },
      h('td', { class: 'name' }, h('code', {}, l.name)), h('td', {}, t(`limit_kind_${kind}`)), load, queued, edit);
    const entry = { row, load, queued, input, shown: String(l.max_running ?? '') };
    limitRows.set(l.name, entry);
    return entry;
  };

  /** @param {Limit[]} limits */
  const showLimits = (limits) => {
    const names = new Set(limits.map((l) => l.name));
    for (const name of [...limitRows.keys()]) if (!names.has(name)) limitRows.delete(name);
    const rows = limits.map((l) => {
      const r = limitRows.get(l.name) || newLimitRow(l);
      current.set(l.name, l);
      r.load.textContent = loadText(l);
      r.load.className = `load limit-${fullness(l)}`;
      r.queued.textContent = String(l.queued);
      if (r.input && mayRefreshInput(r.input, r.shown, document.activeElement === r.input)) {
        r.input.value = String(l.max_running ?? '');
        r.shown = r.input.value;
      }
      return r.row;
    });
    if (!rows.length) {
      limitBody.replaceChildren(h('tr', { class: 'empty' }, h('td', { colspan: admin ? 5 : 4 }, t('no_limits'))));
      return;
    }
    // Only a change of the list moves rows: moving a row would take the focus from its input.
    const same = rows.length === limitBody.children.length && rows.every((r, i) => limitBody.children[i] === r);
    if (!same) limitBody.replaceChildren(...rows);
  };

  /** @param {QueuedRun} q */
  const queueRow = (q) => {
    const state = queueState(q);
    const operate = mayOperate(q.group_id);
    return h('tr', { 'data-run': q.run_id, class: `q-${state}` },
      h('td', { class: 'position' }, q.position),
      h('td', { class: 'run' }, h('a', { href: `#runs/${q.run_id}` }, `#${q.run_id}`)),
      h('td', { class: 'job' }, h('a', { href: `#runs/job/${q.job_id}`, title: t('job_runs') }, `#${q.job_id} ${q.description}`)),
      h('td', { class: 'waits-on' }, h('code', {}, q.waits_on)),
      h('td', { class: 'priority', title: t('priority_now').replace('{n}', String(priorityNow(q))) }, q.priority),
      h('td', { class: 'waited', title: `${t('queued_at')}: ${fmtTime(q.queued_at)}` }, fmtWait(q.waited_ms)),
      h('td', { class: 'state' }, t(`queue_${state}`)),
      h('td', { class: 'row-actions' }, operate ? [
        h('button', { type: 'button', class: 'run-now', disabled: state !== 'waiting', title: t('run_now_help'), onclick: () => {
          if (!confirm(t('confirm_run_now').replace('{id}', String(q.run_id)))) return;
          act(() => api('POST', `/v1/runs/${q.run_id}/run-now`), t('run_now_done').replace('{id}', String(q.run_id)));
        } }, t('run_now')), ' ',
        h('button', { type: 'button', class: 'cancel-run', disabled: state === 'leaving', onclick: () => {
          if (!confirm(t('confirm_cancel_run').replace('{id}', String(q.run_id)))) return;
          act(() => api('POST', `/v1/runs/${q.run_id}/cancel`), t('cancel_run_done').replace('{id}', String(q.run_id)));
        } }, t('cancel_run')),
      ] : ''));
  };

  /** @param {QueuedRun[]} runs */
  const showQueue = (runs) => {
    count.textContent = String(runs.length);
    queueBody.replaceChildren(...(runs.length ? runs.map(queueRow) : [h('tr', { class: 'empty' }, h('td', { colspan: 8 }, t('queue_empty')))]));
  };

  // Both lists at once; a failure to load them is shown until a load succeeds (the message of
  // an action stays in `msg` meanwhile).
  const draw = async () => {
    const seq = ++drawn;
    /** @type {[Limit[], QueuedRun[]]} */
    let got;
    try { got = await Promise.all([api('GET', '/v1/limits'), api('GET', '/v1/queue')]); } catch (e) { if (seq === drawn) loadMsg.replaceChildren(errorBox(e)); return; }
    // Only the newest answer is drawn: an older one may arrive after it.
    if (seq !== drawn) return;
    loadMsg.replaceChildren();
    showLimits(got[0]);
    showQueue(got[1]);
  };

  const limitHead = [t('limit_name'), t('limit_kind'), t('running_max'), t('queued'), admin ? t('max_running') : null].filter((x) => x !== null);
  root.replaceChildren(
    h('h2', {}, t('queue')),
    h('p', { class: 'help' }, t('queue_intro')),
    h('div', { class: 'filters' }, h('button', { type: 'button', id: 'refresh-queue', onclick: () => draw() }, t('refresh')),
      h('span', {}, `${t('queued')}: `, count), h('span', { class: 'note' }, t('auto_refresh_5'))),
    loadMsg, msg,
    h('h3', {}, t('limits')),
    admin ? addLimitForm(msg, draw) : h('p', { class: 'note' }, t('limits_admin_only')),
    h('table', { id: 'limits' }, h('thead', {}, h('tr', {}, limitHead.map((x) => h('th', {}, x)))), limitBody),
    h('h3', {}, t('queued_runs')),
    h('table', { id: 'queue' }, h('thead', {}, h('tr', {}, ['#', t('run'), t('job'), t('waits_on'), t('priority'), t('waited'), t('status'), ''].map((x) => h('th', {}, x)))), queueBody));
  await draw();
  autoRefresh(root, draw, REFRESH_MS);
}
