// @ts-check
// A job's backfills (`#backfills/JOB`) or a workflow's (`#backfills/workflow/ID`): run it once
// for every fire time its schedule had in a past range, at most N at once, oldest or newest
// first (operators), and each backfill with how far it got, cancellable while it runs. It
// refreshes itself every 5 s.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { mayOperate, holdsSomewhere } from '../lib/session.js';
import { fmtTime, localMs } from '../lib/time.js';
import { errorBox, showError } from '../lib/forms.js';
import { autoRefresh } from '../lib/widgets.js';
import { backfillProgress } from '../lib/backfill.js';
import { t } from '../i18n.js';

/** @typedef {import('../lib/backfill.js').Backfill} Backfill */

/**
 * The form that starts a backfill of what `base` names (`/v1/jobs/7`); `started` is called
 * after it started one.
 * @param {string} base
 * @param {() => unknown} started
 */
function backfillForm(base, started) {
  const from = h('input', { name: 'from', type: 'datetime-local', step: 1, required: true });
  const to = h('input', { name: 'to', type: 'datetime-local', step: 1, required: true });
  const atOnce = h('input', { name: 'at_once', type: 'number', min: 1, max: 100, step: 1, value: '1', required: true });
  const newest = h('input', { name: 'newest_first', type: 'checkbox' });
  const box = h('div');
  const form = h('form', { id: 'backfill-form', class: 'inline-form' },
    h('label', {}, t('backfill_from'), ' ', from), ' ',
    h('label', {}, t('backfill_to'), ' ', to), ' ',
    h('label', {}, t('backfill_at_once'), ' ', atOnce), ' ',
    h('label', {}, newest, ' ', t('backfill_newest_first')), ' ',
    h('button', { type: 'submit' }, t('backfill_start')), box);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await api('POST', `${base}/backfills`, {
        from: localMs(/** @type {HTMLInputElement} */ (from)),
        to: localMs(/** @type {HTMLInputElement} */ (to)),
        at_once: Number(/** @type {HTMLInputElement} */ (atOnce).value),
        newest_first: /** @type {HTMLInputElement} */ (newest).checked,
      });
      box.replaceChildren();
      started();
    } catch (e) {
      showError(/** @type {HTMLFormElement} */ (form), box, e);
    }
  });
  return form;
}

/**
 * @param {HTMLElement} root
 * @param {string[]} args the job's id, or `workflow` and the workflow's id
 */
export async function backfills(root, args) {
  const workflow = args[0] === 'workflow';
  const id = Number(workflow ? args[1] : args[0]);
  const base = workflow ? `/v1/workflows/${id}` : `/v1/jobs/${id}`;
  const target = await api('GET', base);
  // A workflow's operators operate every group of its nodes: the admin decides, and says so.
  const operates = workflow ? holdsSomewhere('operator') : mayOperate(target.group_id);
  const runsLink = workflow ? `#workflows/instances/${id}` : `#runs/job/${id}`;
  const body = h('tbody');
  const msg = h('div');
  /** @param {Backfill} b */
  const row = (b) => h('tr', { 'data-backfill': b.id },
    h('td', {}, b.id),
    h('td', {}, fmtTime(b.from, target.time_zone)), h('td', {}, fmtTime(b.to, target.time_zone)),
    h('td', {}, `${b.at_once}${b.newest_first ? ` · ${t('backfill_newest_first')}` : ''}`),
    h('td', { class: `status ${b.state === 'done' && !b.failed ? 'ok' : b.failed ? 'failed' : ''}` }, t(`backfill_state_${b.state}`)),
    h('td', { class: 'progress' }, backfillProgress(b)),
    h('td', {}, b.created_by),
    h('td', { class: 'row-actions' },
      h('a', { href: runsLink }, t(workflow ? 'instances' : 'runs')), ' ',
      b.state === 'running' && operates
        ? h('button', { type: 'button', class: 'cancel-backfill', onclick: async () => {
          if (!confirm(t('backfill_confirm_cancel').replace('{id}', String(b.id)))) return;
          try { await api('POST', `${base}/backfills/${b.id}/cancel`); await draw(); } catch (e) { msg.replaceChildren(errorBox(e)); }
        } }, t('cancel'))
        : ''));
  const draw = async () => {
    try {
      /** @type {Backfill[]} */
      const all = await api('GET', `${base}/backfills`);
      body.replaceChildren(...all.map(row));
    } catch (e) {
      msg.replaceChildren(errorBox(e));
    }
  };
  const canRun = operates && (target.schedule_type === 'CRON' || target.schedule_type === 'FIX_RATE');
  const title = workflow ? target.name : (target.description || target.handler);
  root.replaceChildren(
    h('h2', {}, `${t('backfills')} · ${workflow ? t('workflow') : t('job')} #${target.id} ${title}`),
    h('p', { class: 'note' }, t('backfill_intro')),
    canRun ? backfillForm(base, draw) : '', msg,
    h('table', { id: 'backfills' },
      h('thead', {}, h('tr', {}, ...['#', t('backfill_from'), t('backfill_to'), t('backfill_at_once'), t('status'), t('backfill_progress'), t('backfill_by'), ''].map((c) => h('th', {}, c)))),
      body));
  await draw();
  autoRefresh(root, draw);
}
