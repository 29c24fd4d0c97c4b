// @ts-check
// One workflow instance: its graph coloured by each node's state, a node's details and the
// operations on it (retry, skip, mark succeeded), polled while the instance goes on; once it
// failed, the deliveries of its alarm.
import { h, lines, sleep } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { go } from '../lib/nav.js';
import { fmtTime } from '../lib/time.js';
import { errorBox } from '../lib/forms.js';
import { jobCache } from '../lib/widgets.js';
import { kindName } from '../lib/channels.js';
import { drawGraph, edgeLegend, stateLegend } from '../lib/graph.js';
import { t } from '../i18n.js';

/** @param {string} s */
const isFinal = (s) => s !== 'queued' && s !== 'running';

/**
 * `#workflows/instance/ID`.
 * @param {HTMLElement} root
 * @param {string[]} args
 */
export async function instanceView(root, args) {
  const id = Number(args[1]);
  let inst = await api('GET', `/v1/workflow-instances/${id}`);
  const wf = await api('GET', `/v1/workflows/${inst.workflow_id}`).catch(() => null);
  const jobs = jobCache();
  await jobs.load(inst.definition.nodes.map((/** @type {any} */ n) => n.job_id));
  /** @param {number} jid */
  const jobName = (jid) => { const j = jobs.get(jid); return j ? `#${jid} ${j.description}` : `#${jid}`; };
  const zone = wf ? wf.time_zone : undefined;
  const msg = h('div');
  const stateEl = h('span', { id: 'wfi-state' });
  const live = h('small', { id: 'wfi-live', class: 'note' });
  const finished = h('td', {});
  const stoppedBy = h('td', { id: 'wfi-stopped-by' });
  const stoppedRow = h('tr', { hidden: true }, h('th', {}, t('stopped_by')), stoppedBy);
  const graph = h('div', { id: 'wfi-graph', class: 'wf-canvas' });
  const detail = h('div', { id: 'wf-node-detail', class: 'card wf-detail' });
  const nodeBody = h('tbody');
  /** @type {string | null} */
  let selected = null;
  // The instance's nodes by key; a node of the definition without one has not started.
  /** @param {string} key */
  const runOf = (key) => inst.nodes.find((/** @type {any} */ n) => n.node === key);
  /** @param {string} key @returns {string} */
  const stateOf = (key) => (runOf(key) || { state: 'waiting' }).state;
  /** @param {string} key */
  const select = (key) => { selected = key; draw(); };
  /** @param {() => Promise<any>} fn */
  const act = async (fn) => {
    try { inst = await fn(); msg.replaceChildren(); draw(); poll(); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  const stop = h('button', { type: 'button', id: 'stop-instance', hidden: true, onclick: () => {
    if (confirm(t('confirm_stop_instance'))) act(() => api('POST', `/v1/workflow-instances/${id}/stop`));
  } }, t('stop'));
  /** @param {any} r @param {boolean} [short] */
  const runLink = (r, short) => h('a', { href: `#runs/${r.run_id}`, class: 'run-link', title: t('node_run_link').replace('{id}', r.run_id) },
    short ? `#${r.run_id}` : t('node_run_link').replace('{id}', r.run_id));
  // The admin allows a node change only in a running or finished (not stopped) instance:
  // retry or mark succeeded a failed or stopped node, skip one that waits, failed or was not run.
  /** @param {string} key */
  const nodeActions = (key) => {
    if (['stopped', 'skipped', 'queued'].includes(inst.state)) return [];
    const s = stateOf(key);
    const list = [];
    if (s === 'failed' || s === 'stopped') list.push(['retry', 'retry_node']);
    if (s === 'waiting' || s === 'failed' || s === 'not_run') list.push(['skip', 'skip_node']);
    if (s === 'failed' || s === 'stopped') list.push(['succeed', 'succeed_node']);
    return list.map(([action, label]) => h('button', { type: 'button', class: `node-${action}`, 'data-action': action,
      onclick: () => act(() => api('POST', `/v1/workflow-instances/${id}/nodes/${encodeURIComponent(key)}/${action}`)) }, t(label)));
  };
  /**
   * When a node started or finished, for a node that ran: one waiting or not run (its
   * upstream failed) has no times to show, whatever its record holds.
   * @param {string} key @param {'started_at' | 'finished_at'} which
   */
  const ranAt = (key, which) => {
    const r = runOf(key);
    return r && !['waiting', 'not_run'].includes(stateOf(key)) ? fmtTime(r[which], zone) : '';
  };
  const nodeDetail = () => {
    const n = selected && inst.definition.nodes.find((/** @type {any} */ x) => x.key === selected);
    if (!n) return [h('p', { class: 'note' }, t('click_node'))];
    const r = runOf(n.key);
    const s = stateOf(n.key);
    /** @param {string} k @param {...import('../lib/dom.js').Child} v */
    const row = (k, ...v) => h('tr', {}, h('th', {}, t(k)), h('td', {}, ...v));
    return [h('h3', {}, n.key), h('table', {},
      row('job', h('a', { href: `#jobs/edit/${n.job_id}` }, jobName(n.job_id))),
      row('status', h('span', { class: `state badge wfs-${s}`, 'data-state': s }, t(`wfs_${s}`))),
      n.param !== undefined ? row('node_param', h('span', { class: 'param' }, n.param)) : '',
      row('started_at', ranAt(n.key, 'started_at')), row('finished_at', ranAt(n.key, 'finished_at')),
      row('result', h('span', { class: 'result' }, lines(r ? r.result : ''))),
      row('run', r && r.run_id ? runLink(r) : '')),
    h('div', { class: 'form-actions' }, nodeActions(n.key))];
  };
  /** @param {any} n */
  const nodeRow = (n) => {
    const r = runOf(n.key);
    const s = stateOf(n.key);
    return h('tr', { 'data-node': n.key, class: n.key === selected ? 'selected' : null },
      h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => select(n.key) }, n.key)), h('td', {}, jobName(n.job_id)),
      h('td', { class: 'state', 'data-state': s }, h('span', { class: `badge wfs-${s}` }, t(`wfs_${s}`))),
      h('td', {}, ranAt(n.key, 'started_at')), h('td', {}, ranAt(n.key, 'finished_at')),
      h('td', { class: 'result' }, lines(r ? r.result : '')), h('td', {}, r && r.run_id ? runLink(r, true) : ''));
  };
  const draw = () => {
    stateEl.textContent = t(`wfs_${inst.state}`); stateEl.className = `badge wfs-${inst.state}`; stateEl.dataset.state = inst.state;
    finished.textContent = fmtTime(inst.finished_at, zone);
    stoppedBy.textContent = inst.stopped_by;
    stoppedRow.hidden = !inst.stopped_by;
    stop.hidden = isFinal(inst.state);
    graph.replaceChildren(drawGraph(inst.definition.nodes, inst.definition.edges, { job: jobName, state: stateOf, selected, onselect: select }));
    detail.dataset.node = selected || '';
    detail.replaceChildren(...nodeDetail());
    nodeBody.replaceChildren(...inst.definition.nodes.map(nodeRow));
  };
  // The deliveries of the instance's alarm (`/v1/workflow-instances/{id}/alarms`): none unless
  // it failed and its workflow names channels. Asked again while one is pending.
  const alarmBody = h('tbody');
  const alarmCard = h('div', { class: 'card', id: 'wfi-alarm', hidden: true }, h('h3', {}, t('alarm_deliveries')),
    h('table', { class: 'deliveries' },
      h('thead', {}, h('tr', {}, ['delivery_channel', 'chan_kind', 'status', 'attempts', 'error', 'delivery_sent_at'].map((k) => h('th', {}, t(k))))), alarmBody));
  const loadAlarm = async () => {
    for (let asked = 0; asked < 30 && inst.state === 'failed' && alarmCard.isConnected; asked++) {
      /** @type {any[]} */
      let events;
      try { events = await api('GET', `/v1/workflow-instances/${id}/alarms`); } catch { return; }
      const all = events.flatMap((e) => e.deliveries);
      alarmBody.replaceChildren(...all.map((d) => h('tr', { 'data-channel': d.channel, 'data-state': d.state },
        h('td', { class: 'channel' }, d.channel), h('td', { class: 'kind' }, kindName(d.kind)),
        h('td', { class: `state delivery-${d.state}` }, t(`delivery_${d.state}`)),
        h('td', { class: 'attempts' }, String(d.attempts)), h('td', { class: 'error' }, d.error),
        h('td', { class: 'sent-at' }, fmtTime(d.sent_at, zone)))));
      alarmCard.hidden = !all.length;
      // The alarm is stored a few seconds after the instance fails, then sent.
      if (all.length && !all.some((d) => d.state === 'pending')) return;
      await sleep(2000);
    }
  };
  const name = wf ? `#${wf.id} ${wf.name}` : `#${inst.workflow_id}`;
  /** @param {string} k @param {Node | string} v */
  const info = (k, v) => h('tr', {}, h('th', {}, t(k)), v instanceof Node ? v : h('td', {}, v));
  root.replaceChildren(h('h2', {}, `${t('wf_instance')} #${inst.id} — ${name}`),
    h('div', { class: 'card' }, h('table', { id: 'wfi-detail' },
      info('workflow', h('td', {}, h('a', { href: `#workflows/instances/${inst.workflow_id}`, id: 'wfi-workflow' }, name))),
      info('status', h('td', {}, stateEl, ' ', live)), info('trigger_type', t(inst.trigger_type)),
      info('scheduled', fmtTime(inst.scheduled_at, zone)), info('created_at', fmtTime(inst.created_at, zone)),
      info('finished_at', finished), stoppedRow)),
    stop, h('button', { type: 'button', onclick: () => go(`#workflows/instances/${inst.workflow_id}`) }, t('instances_of')), msg,
    h('div', { class: 'wf-view' }, h('div', { class: 'wf-side' }, graph, stateLegend(), edgeLegend()), detail),
    h('table', { id: 'wfi-nodes' }, h('thead', {}, h('tr', {}, [t('node_key'), t('job'), t('status'), t('started_at'), t('finished_at'), t('result'), t('run')].map((x) => h('th', {}, x)))), nodeBody),
    alarmCard);
  draw();
  loadAlarm();
  // Poll while the instance is queued or running and this page shows it; an action on a node
  // of a finished instance may set it going again, and polling with it. Redrawn only when
  // something changed, so a click on a node is never lost to a redraw.
  const here = location.hash;
  let polling = false;
  const poll = async () => {
    if (polling) return;
    polling = true;
    while (!isFinal(inst.state) && location.hash === here && stateEl.isConnected) {
      live.textContent = `(${t('live')})`;
      await sleep(1500);
      if (location.hash !== here || !stateEl.isConnected) break;
      let next;
      try { next = await api('GET', `/v1/workflow-instances/${id}`); } catch (e) { msg.replaceChildren(errorBox(e)); break; }
      if (JSON.stringify(next) !== JSON.stringify(inst)) { inst = next; draw(); }
    }
    live.textContent = '';
    polling = false;
    loadAlarm();
  };
  poll();
}
