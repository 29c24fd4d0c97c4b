// @ts-check
// The workflows list: those whose every node's group the user sees (administrators: all). A
// workflow runs jobs of several groups; the admin checks each action against all of them.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { go } from '../lib/nav.js';
import { fmtTime } from '../lib/time.js';
import { errorBox } from '../lib/forms.js';
import { scheduleText, calendarTag } from '../lib/schedule.js';
import { actionMenu, autoRefresh } from '../lib/widgets.js';
import { holdsSomewhere } from '../lib/session.js';
import { t } from '../i18n.js';

/** @param {HTMLElement} root */
export async function workflowList(root) {
  const body = h('tbody');
  const msg = h('div');
  let drawn = 0;
  /** @param {() => Promise<unknown>} fn */
  const act = (fn) => async () => { try { await fn(); await draw(); } catch (e) { msg.replaceChildren(errorBox(e)); } };
  /** @param {any} w */
  const trigger = async (w) => {
    try { const r = await api('POST', `/v1/workflows/${w.id}/trigger`, { trigger_type: 'MANUAL' }); go(`#workflows/instance/${r.instance_id}`); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  const [operates, edits] = [holdsSomewhere('operator'), holdsSomewhere('editor')];
  /** @param {any} w */
  const row = (w) => h('tr', { 'data-workflow': w.id },
    h('td', {}, w.id), h('td', { class: 'name' }, w.name), h('td', { class: 'desc' }, w.description),
    h('td', { class: 'schedule' }, scheduleText(w), calendarTag(w)), h('td', { class: 'nodes' }, w.definition.nodes.length),
    h('td', { class: w.running ? 'status ok' : 'status' }, w.running ? `▶ ${t('started')}` : `■ ${t('stopped')}`),
    h('td', { class: 'next-fire' }, w.running && w.next_fire_at > 0 ? fmtTime(w.next_fire_at, w.time_zone) : ''),
    h('td', { class: 'last-fire' }, fmtTime(w.last_fire_at, w.time_zone)),
    h('td', { class: 'row-actions' }, h('a', { href: `#workflows/instances/${w.id}`, class: 'wf-instances' }, t('instances')), ' ', actionMenu([
      // A workflow without a schedule only runs when triggered: the admin refuses to start it.
      !operates ? null : w.running ? ['stop', act(() => api('POST', `/v1/workflows/${w.id}/stop`))] : (w.schedule_type !== 'NONE' ? ['start', act(() => api('POST', `/v1/workflows/${w.id}/start`))] : null),
      operates ? ['trigger_now', () => trigger(w)] : null,
      w.schedule_type === 'CRON' || w.schedule_type === 'FIX_RATE' ? ['backfill', () => go(`#backfills/workflow/${w.id}`)] : null,
      edits ? ['edit', () => go(`#workflows/edit/${w.id}`)] : null,
      edits ? ['copy', () => go(`#workflows/copy/${w.id}`)] : null,
      ['instances', () => go(`#workflows/instances/${w.id}`)],
      // Refused (409) while an instance is queued or running: the message says so.
      edits ? ['remove', act(async () => { if (confirm(t('confirm_delete'))) await api('DELETE', `/v1/workflows/${w.id}`); })] : null,
    ])));
  const draw = async () => {
    const seq = ++drawn;
    /** @type {any[]} */
    let got;
    try { got = await api('GET', '/v1/workflows'); } catch (e) { if (seq === drawn) msg.replaceChildren(errorBox(e)); return; }
    if (seq !== drawn) return;
    body.replaceChildren(...(got.length ? got.map(row) : [h('tr', {}, h('td', { colspan: '9', class: 'note' }, t('none')))]));
  };
  root.replaceChildren(h('h2', {}, t('workflows')),
    h('div', { class: 'filters' }, edits ? h('button', { id: 'new-workflow', type: 'button', onclick: () => go('#workflows/new') }, t('add')) : '', h('span', { class: 'note' }, t('auto_refresh'))), msg,
    h('table', { id: 'workflows' }, h('thead', {}, h('tr', {}, ['#', t('name'), t('wf_description'), t('schedule'), t('nodes'), t('status'), t('next_fire'), t('last_fire'), ''].map((x) => h('th', {}, x)))), body));
  await draw();
  autoRefresh(root, draw);
}
