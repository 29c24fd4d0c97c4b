// @ts-check
// The workflow form (new, edit, copy): its fields from `WORKFLOW_FIELDS`, and the graph as a
// table of nodes and a table of edges beside a drawing that follows every edit. The server's
// complaints about the graph go next to the row at fault.
import { h } from '../lib/dom.js';
import { api, options, calendarsList } from '../lib/api.js';
import { go } from '../lib/nav.js';
import { WORKFLOW_FIELDS } from '../lib/fields.js';
import { controls, control, formBody, rowsOf, section, sel, asApiError, clearErrors, showError } from '../lib/forms.js';
import { previewer } from '../lib/schedule.js';
import { drawGraph, edgeLegend, WHEN } from '../lib/graph.js';
import { channelNames } from '../lib/widgets.js';
import { calendarChoices } from '../lib/calendars.js';
import { nodeFlow, shownKey } from '../lib/flow.js';
import { me, mayEdit } from '../lib/session.js';
import { t } from '../i18n.js';

const JOINS = ['all', 'any'];

/**
 * The first of a, b, … z (then n1, n2, …) that no node uses: a new row's key.
 * @param {string[]} used
 */
function nextKey(used) {
  for (let c = 97; c <= 122; c += 1) if (!used.includes(String.fromCharCode(c))) return String.fromCharCode(c);
  for (let i = 1; ; i += 1) if (!used.includes(`n${i}`)) return `n${i}`;
}

/**
 * `#workflows/new`, `#workflows/edit/ID`, `#workflows/copy/ID`.
 * @param {HTMLElement} root
 * @param {string[]} args
 */
export async function workflowFormPage(root, args) {
  const [what, id] = args;
  if (what === 'new') return workflowForm(root, null);
  const wf = await api('GET', `/v1/workflows/${Number(id)}`);
  // A copy is the workflow without its id, stopped: the form saves it as a new one.
  return workflowForm(root, what === 'copy' ? { ...wf, id: undefined, name: `${wf.name} ${t('copy_suffix')}` } : wf);
}

/**
 * @typedef {{key: string, job_id: number, param?: string, join?: string, priority?: number | string, concurrency_key?: string}} GraphNode
 * @typedef {{from: string, to: string, when?: string}} GraphEdge
 */

/**
 * @param {HTMLElement} root
 * @param {any} wf the workflow edited or copied, or null for a new one
 */
async function workflowForm(root, wf) {
  /** @type {[Record<string, any>, any[], any[]]} */
  const [o, jobs, calendars] = await Promise.all([options(), api('GET', '/v1/jobs?limit=10000'), calendarsList()]);
  const isNew = !(wf && wf.id);
  /** @type {{nodes: GraphNode[], edges: GraphEdge[]}} */
  const definition = wf ? wf.definition : { nodes: [{ key: 'a', job_id: 0, join: 'all' }], edges: [] };
  const byId = new Map(jobs.map((j) => [j.id, j]));
  // Nodes may run jobs of any group the user edits (all, for administrators): they are named as
  // child jobs are, by id and description.
  /** @param {number} id */
  const jobName = (id) => { const j = byId.get(id); return j ? `#${id} ${j.description}` : (id ? `#${id}` : ''); };
  const ctl = controls(WORKFLOW_FIELDS, wf, { isNew, options: o, choices: { calendars: calendarChoices(calendars, wf ? wf.calendar : '') } });
  const input = (/** @type {string} */ name) => /** @type {HTMLInputElement} */ (control(ctl, name).input);
  const [scheduleType, expr, zone, calendar] = ['schedule_type', 'schedule_expr', 'time_zone', 'calendar'].map(input);
  const preview = h('div', { id: 'preview-box' });
  const msg = h('div');
  const nodeBody = h('tbody');
  const edgeBody = h('tbody');
  // The keys typed so far, offered in the edges' from and to fields.
  const keyList = h('datalist', { id: 'wf-node-keys' });
  const drawing = h('div', { id: 'wf-drawing', class: 'wf-canvas' });
  const nodesErr = h('div', { id: 'wf-nodes-err' });
  const edgesErr = h('div', { id: 'wf-edges-err' });
  /** @param {Element} tr @param {string} name */
  const cell = (tr, name) => /** @type {HTMLInputElement} */ (tr.querySelector(`[name=${name}]`));
  /** @param {Element} tr @param {string} name */
  const value = (tr, name) => cell(tr, name).value;
  /** @returns {GraphNode[]} */
  const nodesNow = () => [...nodeBody.rows].map((tr) => ({
    key: value(tr, 'node_key').trim(), job_id: Number(value(tr, 'node_job')) || 0,
    // Empty: the job's own parameter.
    param: value(tr, 'node_param') === '' ? undefined : value(tr, 'node_param'), join: value(tr, 'node_join'),
    ...nodeFlow(value(tr, 'node_priority'), value(tr, 'node_concurrency_key')),
  }));
  /** @returns {GraphEdge[]} */
  const edgesNow = () => [...edgeBody.rows].map((tr) => ({ from: value(tr, 'edge_from').trim(), to: value(tr, 'edge_to').trim(), when: value(tr, 'edge_when') }));
  const changed = () => {
    const nodes = nodesNow();
    keyList.replaceChildren(...[...new Set(nodes.map((n) => n.key).filter(Boolean))].map((k) => h('option', { value: k })));
    drawing.replaceChildren(drawGraph(nodes, edgesNow(), { job: jobName }));
  };
  // Renaming a node takes its edges along, unless another row has (or had) that key too: then
  // which node an edge meant is the user's to say.
  /** @param {string} was @param {string} now @param {Element} row */
  const renameEdges = (was, now, row) => {
    if (!was || was === now) return;
    const others = [...nodeBody.rows].filter((tr) => tr !== row).map((tr) => value(tr, 'node_key').trim());
    if (others.includes(was) || others.includes(now)) return;
    for (const el of edgeBody.querySelectorAll('[name=edge_from], [name=edge_to]')) {
      const end = /** @type {HTMLInputElement} */ (el);
      if (end.value.trim() === was) end.value = now;
    }
  };
  /** @param {HTMLTableRowElement} tr */
  const removeButton = (tr) => h('button', { type: 'button', class: 'remove-row', title: t('remove'), 'aria-label': t('remove'), onclick: () => { tr.remove(); edgesErr.replaceChildren(); nodesErr.replaceChildren(); changed(); } }, '✕');
  /** @param {GraphNode} n */
  const nodeRow = (n) => {
    const key = h('input', { name: 'node_key', value: n.key || '', size: '8', autocomplete: 'off', 'aria-label': t('node_key') });
    // A job the list does not hold (deleted since) stays chosen, by id: saving names it.
    /** @type {Array<[number, string]>} */
    const gone = n.job_id && !byId.has(n.job_id) ? [[n.job_id, `#${n.job_id}`]] : [];
    const job = sel('node_job', [['', t('choose_job')], ...jobs.filter((x) => mayEdit(x.group_id) || x.id === n.job_id).map((x) => /** @type {[number, string]} */ ([x.id, `${x.id} ${x.description}`])), ...gone], n.job_id || '');
    job.setAttribute('aria-label', t('job'));
    const param = h('input', { name: 'node_param', value: n.param ?? '', placeholder: t('node_param_hint'), 'aria-label': t('param') });
    const priority = h('input', { name: 'node_priority', type: 'number', value: n.priority ?? '', size: '5', placeholder: t('node_flow_hint'), 'aria-label': t('priority') });
    priority.title = t('node_priority_help');
    const limitKey = h('input', { name: 'node_concurrency_key', value: shownKey(n.concurrency_key), size: '10', placeholder: t('node_flow_hint'), 'aria-label': t('concurrency_key') });
    limitKey.title = t('node_concurrency_key_help');
    const join = sel('node_join', JOINS.map((v) => /** @type {[string, string]} */ ([v, t(`join_${v}`)])), n.join || 'all');
    join.setAttribute('aria-label', t('join'));
    join.title = t('join_help');
    const tr = h('tr', { class: 'wf-node-row' }, h('td', {}, key), h('td', {}, job), h('td', {}, param), h('td', {}, priority), h('td', {}, limitKey), h('td', {}, join));
    tr.append(h('td', {}, removeButton(tr)));
    let was = key.value.trim();
    key.addEventListener('input', () => { const now = key.value.trim(); renameEdges(was, now, tr); was = now; });
    return tr;
  };
  /** @param {GraphEdge} e */
  const edgeRow = (e) => {
    const from = h('input', { name: 'edge_from', value: e.from || '', list: 'wf-node-keys', size: '10', autocomplete: 'off', 'aria-label': t('edge_from') });
    const to = h('input', { name: 'edge_to', value: e.to || '', list: 'wf-node-keys', size: '10', autocomplete: 'off', 'aria-label': t('edge_to') });
    const when = sel('edge_when', WHEN.map((v) => /** @type {[string, string]} */ ([v, t(`when_${v}`)])), e.when || 'success');
    when.setAttribute('aria-label', t('when'));
    const tr = h('tr', { class: 'wf-edge-row' }, h('td', {}, from), h('td', {}, '→'), h('td', {}, to), h('td', {}, when));
    tr.append(h('td', {}, removeButton(tr)));
    return tr;
  };
  nodeBody.append(...definition.nodes.map(nodeRow));
  edgeBody.append(...(definition.edges || []).map(edgeRow));
  // An edit clears the complaint about what was edited (as the other forms do), and redraws.
  nodeBody.addEventListener('input', (ev) => {
    const target = /** @type {HTMLElement} */ (ev.target);
    target.removeAttribute('aria-invalid');
    for (const el of (target.parentElement || nodeBody).querySelectorAll('.field-err')) el.remove();
    nodesErr.replaceChildren();
    changed();
  });
  edgeBody.addEventListener('input', () => {
    for (const el of edgeBody.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
    edgesErr.replaceChildren();
    changed();
  });
  /** @param {HTMLTableSectionElement} body */
  const lastRow = (body) => /** @type {Element} */ (body.lastElementChild);
  const addNode = h('button', { type: 'button', id: 'add-node', onclick: () => {
    nodeBody.append(nodeRow({ key: nextKey(nodesNow().map((n) => n.key)), job_id: 0, join: 'all' }));
    nodesErr.replaceChildren();
    changed();
    cell(lastRow(nodeBody), 'node_job').focus();
  } }, t('add_node'));
  const addEdge = h('button', { type: 'button', id: 'add-edge', onclick: () => {
    edgeBody.append(edgeRow({ from: '', to: '', when: 'success' }));
    changed();
    cell(lastRow(edgeBody), 'edge_from').focus();
  } }, t('add_edge'));

  /**
   * Shows an error about the graph where it belongs: a node's key, job, parameter or join
   * (`definition.nodes[KEY].param`) next to that field of that node's row, the edges
   * (`definition.edges.to`, or a node's edges: to itself, twice, on a cycle) under the edge
   * table with the edges at fault marked, anything else about the graph under the node
   * table. `sent` is the definition saved, whose nodes and edges are the rows in order.
   * False when the error is not about the graph.
   * @param {unknown} thrown
   * @param {{nodes: GraphNode[], edges: GraphEdge[]}} sent
   */
  const showGraphError = (thrown, sent) => {
    const e = asApiError(thrown);
    const name = String(e.field || '');
    if (name !== 'definition' && !name.startsWith('definition.')) return false;
    const err = () => h('span', { class: 'field-err err', role: 'alert', 'data-field': name }, e.message);
    const m = /^definition\.nodes\[(.*)\]\.(\w+)$/.exec(name);
    /** @type {Record<string, string>} */
    const inputs = { key: 'node_key', job_id: 'node_job', param: 'node_param', join: 'node_join', priority: 'node_priority', concurrency_key: 'node_concurrency_key' };
    const at = m && inputs[m[2]];
    const rows = m ? [...nodeBody.rows].filter((_, i) => sent.nodes[i] && sent.nodes[i].key === m[1]) : [];
    if (at && rows.length) {
      // A key given twice: both rows are marked, the message goes to the second.
      for (const tr of rows) cell(tr, at).setAttribute('aria-invalid', 'true');
      const el = cell(rows[rows.length - 1], at);
      el.after(err());
      el.focus();
      return true;
    }
    if (name.startsWith('definition.edges') || (m && m[2] === 'edges')) {
      const keys = new Set(sent.nodes.map((n) => n.key));
      [...edgeBody.rows].forEach((tr, i) => {
        const edge = sent.edges[i];
        if (!edge) return;
        // An edge to (or from) no node; or, for a node's edges, those into that node.
        const bad = m ? (edge.to === m[1] ? ['edge_to'] : [])
          : /** @type {Array<'from' | 'to'>} */ (['from', 'to']).filter((end) => name.endsWith(`.${end}`) && !keys.has(edge[end])).map((end) => `edge_${end}`);
        for (const b of bad) cell(tr, b).setAttribute('aria-invalid', 'true');
      });
      edgesErr.replaceChildren(err());
      return true;
    }
    nodesErr.replaceChildren(err());
    return true;
  };

  const form = h('form', { class: 'card job-form wf-form', id: 'wf-form', onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    const sent = { nodes: nodesNow(), edges: edgesNow() };
    const body = { ...formBody(WORKFLOW_FIELDS, ctl, { isNew }), definition: sent };
    clearErrors(form); msg.replaceChildren(); nodesErr.replaceChildren(); edgesErr.replaceChildren();
    try {
      if (isNew) await api('POST', '/v1/workflows', body); else await api('PUT', `/v1/workflows/${wf.id}`, body);
      go('#workflows');
    } catch (e) { if (!showGraphError(e, sent)) showError(form, msg, e); }
  } },
  section('workflow', rowsOf(ctl, 'workflow')),
  section('schedule', rowsOf(ctl, 'schedule', { calendar: preview })),
  section('concurrency', rowsOf(ctl, 'concurrency')),
  // Channel names are suggested to administrators, who see the channels.
  section('alarms', rowsOf(ctl, 'alarms', { alarm_channels: channelNames(input('alarm_channels'), me().admin) })),
  section('graph', h('div', { class: 'wf-edit' },
    h('div', { class: 'wf-tables' },
      h('h4', {}, t('nodes')),
      h('table', { id: 'wf-nodes', class: 'wf-table' }, h('thead', {}, h('tr', {}, [t('node_key'), t('job'), t('node_param'), t('priority'), t('concurrency_key'), t('join'), ''].map((x) => h('th', {}, x)))), nodeBody),
      addNode, nodesErr,
      h('h4', {}, t('edges')),
      h('table', { id: 'wf-edges', class: 'wf-table' }, h('thead', {}, h('tr', {}, [t('edge_from'), '', t('edge_to'), t('when'), ''].map((x) => h('th', {}, x)))), edgeBody),
      addEdge, edgesErr, keyList,
      h('p', { class: 'help' }, t('graph_help'))),
    h('div', { class: 'wf-side' }, drawing, edgeLegend()))),
  h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('save')), h('button', { type: 'button', onclick: () => go('#workflows') }, t('cancel'))), msg);
  root.replaceChildren(h('h2', {}, isNew ? t('new_workflow') : `${t('workflows')} — #${wf.id} ${wf.name}`), form);
  previewer(/** @type {HTMLSelectElement} */ (/** @type {unknown} */ (scheduleType)), expr, zone, preview, { calendar: /** @type {HTMLSelectElement} */ (/** @type {unknown} */ (calendar)) });
  /** @param {HTMLElement} el */
  const labelOf = (el) => /** @type {HTMLElement} */ (el.closest('label'));
  // Show only the fields that apply: no expression without a schedule, no zone but for CRON,
  // a business calendar on a grid of fire times only.
  const toggle = () => {
    labelOf(expr).hidden = scheduleType.value === 'NONE';
    labelOf(zone).hidden = scheduleType.value !== 'CRON';
    labelOf(calendar).hidden = scheduleType.value !== 'CRON' && scheduleType.value !== 'FIX_RATE';
  };
  scheduleType.addEventListener('change', toggle);
  toggle();
  changed();
}
