// The workflow pages: the list, the form (node and edge tables next to a drawing of the graph
// that follows every edit), a workflow's instances, and one instance with the state of each
// node. Admins only, as the API: a workflow runs jobs of any group. As everywhere in the
// console, data reaches the page as text nodes and attributes only, in the SVG drawing too.
import { h, api, options, fmtTime, errorBox, showError, clearErrors, go } from './app.js';
import { t } from './i18n.js';
import { field, sel, num, previewer, optSelect, scheduleText, actionMenu, autoRefresh, jobCache, lines, sleep } from './pages.js';

const WHEN = ['success', 'failure', 'always'];
const JOINS = ['all', 'any'];
const INSTANCE_STATES = ['queued', 'running', 'succeeded', 'failed', 'stopped', 'skipped'];
// A node of the definition without a state has not started: the drawing calls it waiting.
const NODE_STATES = ['waiting', 'running', 'succeeded', 'failed', 'skipped', 'not_run', 'stopped'];
const isFinal = (s) => s !== 'queued' && s !== 'running';

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates an SVG element the way `h` creates HTML ones: attributes, listeners and text nodes. */
function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const BOX_W = 168;
// The width of the slot a long edge takes in each layer it crosses.
const VIA_W = 8;
const GAP_X = 28;
const GAP_Y = 48;
const PAD = 12;
/** `text` cut to `n` characters: a box has a fixed width; the full text is in its tooltip. */
const clip = (text, n) => { const c = [...String(text)]; return c.length > n ? `${c.slice(0, n - 1).join('')}…` : c.join(''); };

/**
 * Where each node goes in a layered drawing, top to bottom. A node's layer is the longest path
 * to it from a root, so every edge points down and parents sit above all their children. An
 * edge that spans several layers passes through a narrow slot of its own in each layer between
 * (a "via"), so it bends around the boxes rather than through them. Within a layer, nodes and
 * vias are ordered by the mean position of their parents (fewer crossings), ties in table
 * order. Nodes on a cycle (the server refuses those) never get a layer that way: they share
 * one extra layer at the bottom, so the drawing still shows them.
 * `keys`: distinct node keys in table order; `edges`: `{from, to}` between them. Returns each
 * node's and via's `{x, y, w}`, the size, and for each edge the vias it passes, top down.
 */
export function layout(keys, edges, boxH) {
  const children = new Map(keys.map((k) => [k, []]));
  const indegree = new Map(keys.map((k) => [k, 0]));
  for (const e of edges) {
    children.get(e.from).push(e.to);
    indegree.set(e.to, indegree.get(e.to) + 1);
  }
  // Kahn's order: a node is placed once all its parents are, one layer below the lowest.
  const layer = new Map();
  const order = keys.filter((k) => indegree.get(k) === 0);
  for (const k of order) layer.set(k, 0);
  for (let i = 0; i < order.length; i += 1) {
    for (const c of children.get(order[i])) {
      layer.set(c, Math.max(layer.get(c) ?? 0, layer.get(order[i]) + 1));
      indegree.set(c, indegree.get(c) - 1);
      if (indegree.get(c) === 0) order.push(c);
    }
  }
  const placed = new Set(order);
  const stuck = keys.filter((k) => !placed.has(k));
  const deepest = Math.max(-1, ...order.map((k) => layer.get(k)));
  for (const k of stuck) layer.set(k, deepest + 1);
  // Vias are objects, so they never clash with a key typed in the form.
  const width = new Map(keys.map((k) => [k, BOX_W]));
  const parents = new Map(keys.map((k) => [k, []]));
  const routes = edges.map((e) => {
    const via = [];
    let above = e.from;
    for (let l = layer.get(e.from) + 1; l < layer.get(e.to); l += 1) {
      const v = { via: true };
      layer.set(v, l); width.set(v, VIA_W); parents.set(v, [above]);
      via.push(v);
      above = v;
    }
    parents.get(e.to).push(above);
    return via;
  });
  const rows = [];
  for (const k of [...keys, ...routes.flat()]) (rows[layer.get(k)] ||= []).push(k);
  const rowWidth = (row) => row.reduce((a, k) => a + width.get(k), 0) + GAP_X * (row.length - 1);
  const widest = Math.max(BOX_W, ...rows.map(rowWidth));
  const pos = new Map();
  rows.forEach((row, i) => {
    const mean = new Map(row.map((k) => {
      const xs = parents.get(k).filter((p) => pos.has(p)).map((p) => pos.get(p).x + pos.get(p).w / 2);
      return [k, xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Infinity];
    }));
    row.sort((a, b) => (mean.get(a) === mean.get(b) ? 0 : mean.get(a) < mean.get(b) ? -1 : 1));
    let x = PAD + (widest - rowWidth(row)) / 2;
    for (const k of row) {
      pos.set(k, { x, y: PAD + i * (boxH + GAP_Y), w: width.get(k) });
      x += width.get(k) + GAP_X;
    }
  });
  // Edges within the cycle layer curve below it: room for them.
  const height = rows.length * (boxH + GAP_Y) - GAP_Y + 2 * PAD + (stuck.length ? GAP_Y : 0);
  return { pos, routes, width: widest + 2 * PAD, height };
}

/**
 * The drawing of a graph: `nodes` `[{key, job_id}]` and `edges` `[{from, to, when}]`. An edge
 * whose ends are not both nodes is left out (its table row stays, and saving names it), as is
 * a second node of the same key. `opts.job(id)` names a node's job; `opts.state(key)`, in an
 * instance, gives a node's state (the boxes are coloured by it); `opts.onselect(key)` makes
 * the boxes clickable, `opts.selected` is the key drawn as chosen.
 */
export function drawGraph(nodes, edges, opts = {}) {
  const seen = new Set();
  const list = nodes.filter((n) => n.key && !seen.has(n.key) && seen.add(n.key));
  if (!list.length) return h('p', { class: 'note', id: 'wf-graph-empty' }, t('graph_empty'));
  const shown = edges.filter((e) => seen.has(e.from) && seen.has(e.to) && e.from !== e.to);
  const boxH = opts.state ? 58 : 44;
  const { pos, routes, width, height } = layout(list.map((n) => n.key), shown, boxH);
  // One arrowhead per kind of edge, coloured like its line.
  const defs = svg('defs', {}, WHEN.map((w) => svg('marker', { id: `wf-arrow-${w}`, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    svg('path', { d: 'M0,0 L10,5 L0,10 z', class: `wf-arrow when-${w}` }))));
  const out = svg('svg', { id: 'wf-graph', class: 'wf-graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': t('graph') }, defs);
  // A vertical S-curve: leaves and arrives vertically, so arrowheads point down.
  const curve = (x1, y1, x2, y2) => { const m = (y2 - y1) / 2; return ` C${x1},${y1 + m} ${x2},${y2 - m} ${x2},${y2}`; };
  shown.forEach((e, i) => {
    const when = WHEN.includes(e.when) ? e.when : 'success';
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    let x = a.x + BOX_W / 2;
    let y = a.y + boxH;
    let d = `M${x},${y}`;
    if (b.y > a.y) {
      // From the parent's bottom, down through the edge's vias, to the child's top.
      for (const v of routes[i]) {
        const p = pos.get(v);
        const vx = p.x + p.w / 2;
        d += `${curve(x, y, vx, p.y)} L${vx},${p.y + boxH}`;
        x = vx; y = p.y + boxH;
      }
      d += curve(x, y, b.x + BOX_W / 2, b.y - 1);
    } else {
      // Both in the cycle layer: a curve below, into the child's bottom.
      const x2 = b.x + BOX_W / 2;
      d += ` C${x},${y + GAP_Y} ${x2},${y + GAP_Y} ${x2},${y + 1}`;
    }
    out.append(svg('path', { class: `wf-edge when-${when}`, d, 'marker-end': `url(#wf-arrow-${when})`, 'data-from': e.from, 'data-to': e.to },
      svg('title', {}, `${e.from} → ${e.to}: ${t(`when_${when}`)}`)));
  });
  for (const n of list) {
    const p = pos.get(n.key);
    const st = opts.state ? opts.state(n.key) : null;
    const job = opts.job ? opts.job(n.job_id) : '';
    const g = svg('g', { class: ['wf-node', st ? `wfs-${st}` : '', opts.selected === n.key ? 'selected' : ''].filter(Boolean).join(' '), 'data-key': n.key, 'data-state': st, transform: `translate(${p.x},${p.y})` },
      svg('title', {}, [n.key, job, st ? t(`wfs_${st}`) : ''].filter(Boolean).join(' — ')),
      svg('rect', { width: BOX_W, height: boxH, rx: 6 }),
      svg('text', { x: 10, y: 18, class: 'wf-key' }, clip(n.key, 18)),
      svg('text', { x: 10, y: 35, class: 'wf-job' }, clip(job, 22)),
      st ? svg('text', { x: 10, y: 51, class: 'wf-state' }, t(`wfs_${st}`)) : '');
    if (opts.onselect) {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.addEventListener('click', () => opts.onselect(n.key));
      g.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); opts.onselect(n.key); } });
    }
    out.append(g);
  }
  return out;
}

/** What the line styles of the drawing mean. */
const edgeLegend = () => h('div', { class: 'legend wf-legend' }, WHEN.map((w) => [h('span', { class: `line when-${w}` }), t(`when_${w}`)]));
/** What the colours of an instance's drawing mean. */
const stateLegend = () => h('div', { class: 'legend wf-legend' }, NODE_STATES.map((s) => [h('span', { class: `chip wfs-${s}` }), t(`wfs_${s}`)]));

/** The first of a, b, … z (then n1, n2, …) that no node uses: a new row's key. */
function nextKey(used) {
  for (let c = 97; c <= 122; c += 1) if (!used.includes(String.fromCharCode(c))) return String.fromCharCode(c);
  for (let i = 1; ; i += 1) if (!used.includes(`n${i}`)) return `n${i}`;
}

async function workflowForm(root, wf) {
  const [o, jobs] = await Promise.all([options(), api('GET', '/v1/jobs?limit=10000')]);
  const w = wf || { name: '', description: '', schedule_type: 'NONE', schedule_expr: '', time_zone: '', misfire_strategy: 'DO_NOTHING', max_instances: 0, on_limit: 'skip',
    definition: { nodes: [{ key: 'a', job_id: 0, join: 'all' }], edges: [] } };
  const byId = new Map(jobs.map((j) => [j.id, j]));
  // Nodes may run jobs of any group: they are named as child jobs are, by id and description.
  const jobName = (id) => { const j = byId.get(id); return j ? `#${id} ${j.description}` : (id ? `#${id}` : ''); };
  const st = optSelect('schedule_type', o.schedule_types, 'sched', w.schedule_type);
  const mf = optSelect('misfire_strategy', o.misfire_strategies, 'misfire', w.misfire_strategy);
  const f = {
    name: h('input', { name: 'name', value: w.name }),
    description: h('input', { name: 'description', value: w.description || '' }),
    schedule_type: st.select,
    schedule_expr: h('input', { name: 'schedule_expr', value: w.schedule_expr || '' }),
    time_zone: h('input', { name: 'time_zone', value: w.time_zone || '', placeholder: 'UTC, Asia/Shanghai…' }),
    misfire_strategy: mf.select,
    max_instances: h('input', { name: 'max_instances', type: 'number', min: '0', max: '10000', value: w.max_instances }),
    on_limit: sel('on_limit', ['skip', 'queue'].map((v) => [v, t(`on_limit_${v}`)]), w.on_limit),
  };
  const preview = h('div', { id: 'preview-box' });
  const msg = h('div');
  const nodeBody = h('tbody');
  const edgeBody = h('tbody');
  // The keys typed so far, offered in the edges' from and to fields.
  const keyList = h('datalist', { id: 'wf-node-keys' });
  const drawing = h('div', { id: 'wf-drawing', class: 'wf-canvas' });
  const nodesErr = h('div', { id: 'wf-nodes-err' });
  const edgesErr = h('div', { id: 'wf-edges-err' });
  const value = (tr, name) => tr.querySelector(`[name=${name}]`).value;
  const nodesNow = () => [...nodeBody.rows].map((tr) => ({
    key: value(tr, 'node_key').trim(), job_id: Number(value(tr, 'node_job')) || 0,
    // Empty: the job's own parameter.
    param: value(tr, 'node_param') === '' ? undefined : value(tr, 'node_param'), join: value(tr, 'node_join'),
  }));
  const edgesNow = () => [...edgeBody.rows].map((tr) => ({ from: value(tr, 'edge_from').trim(), to: value(tr, 'edge_to').trim(), when: value(tr, 'edge_when') }));
  const changed = () => {
    const nodes = nodesNow();
    keyList.replaceChildren(...[...new Set(nodes.map((n) => n.key).filter(Boolean))].map((k) => h('option', { value: k })));
    drawing.replaceChildren(drawGraph(nodes, edgesNow(), { job: jobName }));
  };
  // Renaming a node takes its edges along, unless another row has (or had) that key too: then
  // which node an edge meant is the user's to say.
  const renameEdges = (was, now, row) => {
    if (!was || was === now) return;
    const others = [...nodeBody.rows].filter((tr) => tr !== row).map((tr) => value(tr, 'node_key').trim());
    if (others.includes(was) || others.includes(now)) return;
    for (const input of edgeBody.querySelectorAll('[name=edge_from], [name=edge_to]')) if (input.value.trim() === was) input.value = now;
  };
  const removeButton = (tr) => h('button', { type: 'button', class: 'remove-row', title: t('remove'), 'aria-label': t('remove'), onclick: () => { tr.remove(); edgesErr.replaceChildren(); nodesErr.replaceChildren(); changed(); } }, '✕');
  const nodeRow = (n) => {
    const key = h('input', { name: 'node_key', value: n.key || '', size: '8', autocomplete: 'off', 'aria-label': t('node_key') });
    // A job the list does not hold (deleted since) stays chosen, by id: saving names it.
    const gone = n.job_id && !byId.has(n.job_id) ? [[n.job_id, `#${n.job_id}`]] : [];
    const job = sel('node_job', [['', t('choose_job')], ...jobs.map((x) => [x.id, `${x.id} ${x.description}`]), ...gone], n.job_id || '');
    job.setAttribute('aria-label', t('job'));
    const param = h('input', { name: 'node_param', value: n.param ?? '', placeholder: t('node_param_hint'), 'aria-label': t('param') });
    const join = sel('node_join', JOINS.map((v) => [v, t(`join_${v}`)]), n.join || 'all');
    join.setAttribute('aria-label', t('join'));
    join.title = t('join_help');
    const tr = h('tr', { class: 'wf-node-row' }, h('td', {}, key), h('td', {}, job), h('td', {}, param), h('td', {}, join));
    tr.append(h('td', {}, removeButton(tr)));
    let was = key.value.trim();
    key.addEventListener('input', () => { const now = key.value.trim(); renameEdges(was, now, tr); was = now; });
    return tr;
  };
  const edgeRow = (e) => {
    const from = h('input', { name: 'edge_from', value: e.from || '', list: 'wf-node-keys', size: '10', autocomplete: 'off', 'aria-label': t('edge_from') });
    const to = h('input', { name: 'edge_to', value: e.to || '', list: 'wf-node-keys', size: '10', autocomplete: 'off', 'aria-label': t('edge_to') });
    const when = sel('edge_when', WHEN.map((v) => [v, t(`when_${v}`)]), e.when || 'success');
    when.setAttribute('aria-label', t('when'));
    const tr = h('tr', { class: 'wf-edge-row' }, h('td', {}, from), h('td', {}, '→'), h('td', {}, to), h('td', {}, when));
    tr.append(h('td', {}, removeButton(tr)));
    return tr;
  };
  nodeBody.append(...w.definition.nodes.map(nodeRow));
  edgeBody.append(...(w.definition.edges || []).map(edgeRow));
  // An edit clears the complaint about what was edited (as the other forms do), and redraws.
  nodeBody.addEventListener('input', (ev) => {
    ev.target.removeAttribute('aria-invalid');
    for (const el of ev.target.parentElement.querySelectorAll('.field-err')) el.remove();
    nodesErr.replaceChildren();
    changed();
  });
  edgeBody.addEventListener('input', (ev) => {
    for (const el of edgeBody.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
    edgesErr.replaceChildren();
    changed();
  });
  const addNode = h('button', { type: 'button', id: 'add-node', onclick: () => {
    nodeBody.append(nodeRow({ key: nextKey(nodesNow().map((n) => n.key)), job_id: 0, join: 'all' }));
    nodesErr.replaceChildren();
    changed();
    nodeBody.lastElementChild.querySelector('[name=node_job]').focus();
  } }, t('add_node'));
  const addEdge = h('button', { type: 'button', id: 'add-edge', onclick: () => {
    edgeBody.append(edgeRow({ from: '', to: '', when: 'success' }));
    changed();
    edgeBody.lastElementChild.querySelector('[name=edge_from]').focus();
  } }, t('add_edge'));

  /**
   * Shows an error about the graph where it belongs: a node's key, job, parameter or join
   * (`definition.nodes[KEY].param`) next to that field of that node's row, the edges
   * (`definition.edges.to`, or a node's edges: to itself, twice, on a cycle) under the edge
   * table with the edges at fault marked, anything else about the graph under the node
   * table. `sent` is the definition saved, whose nodes and edges are the rows in order.
   * False when the error is not about the graph.
   */
  const showGraphError = (e, sent) => {
    const name = String(e.field || '');
    if (name !== 'definition' && !name.startsWith('definition.')) return false;
    const err = () => h('span', { class: 'field-err err', role: 'alert', 'data-field': name }, e.message);
    const m = /^definition\.nodes\[(.*)\]\.(\w+)$/.exec(name);
    const input = m && { key: 'node_key', job_id: 'node_job', param: 'node_param', join: 'node_join' }[m[2]];
    const rows = m ? [...nodeBody.rows].filter((_, i) => sent.nodes[i] && sent.nodes[i].key === m[1]) : [];
    if (input && rows.length) {
      // A key given twice: both rows are marked, the message goes to the second.
      for (const tr of rows) tr.querySelector(`[name=${input}]`).setAttribute('aria-invalid', 'true');
      const at = rows[rows.length - 1].querySelector(`[name=${input}]`);
      at.after(err());
      at.focus();
      return true;
    }
    if (name.startsWith('definition.edges') || (m && m[2] === 'edges')) {
      const keys = new Set(sent.nodes.map((n) => n.key));
      [...edgeBody.rows].forEach((tr, i) => {
        const edge = sent.edges[i];
        if (!edge) return;
        // An edge to (or from) no node; or, for a node's edges, those into that node.
        const bad = m ? (edge.to === m[1] ? ['edge_to'] : [])
          : ['from', 'to'].filter((end) => name.endsWith(`.${end}`) && !keys.has(edge[end])).map((end) => `edge_${end}`);
        for (const b of bad) tr.querySelector(`[name=${b}]`).setAttribute('aria-invalid', 'true');
      });
      edgesErr.replaceChildren(err());
      return true;
    }
    nodesErr.replaceChildren(err());
    return true;
  };

  const section = (key, ...rows) => h('fieldset', { class: 'sec', 'data-section': key }, h('legend', {}, t(`sec_${key}`)), rows);
  const form = h('form', { class: 'card job-form wf-form', id: 'wf-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const cron = f.schedule_type.value === 'CRON';
    const sent = { nodes: nodesNow(), edges: edgesNow() };
    const body = {
      name: f.name.value, description: f.description.value,
      schedule_type: f.schedule_type.value, schedule_expr: f.schedule_expr.value,
      // The zone applies to CRON only; left out, a workflow keeps the one it has.
      time_zone: cron && f.time_zone.value ? f.time_zone.value : undefined, misfire_strategy: f.misfire_strategy.value,
      max_instances: num(f.max_instances.value), on_limit: f.on_limit.value, definition: sent,
    };
    clearErrors(form); msg.replaceChildren(); nodesErr.replaceChildren(); edgesErr.replaceChildren();
    try {
      if (wf && wf.id) await api('PUT', `/v1/workflows/${wf.id}`, body); else await api('POST', '/v1/workflows', body);
      go('#workflows');
    } catch (e) { if (!showGraphError(e, sent)) showError(form, msg, e); }
  } },
  section('workflow', field('name', f.name), field('wf_description', f.description)),
  section('schedule', field('schedule_type', f.schedule_type, st.help), field('schedule_expr', f.schedule_expr), field('time_zone', f.time_zone), preview,
    field('misfire_strategy', f.misfire_strategy, mf.help)),
  section('concurrency', field('max_instances', f.max_instances, h('small', { class: 'help' }, t('max_instances_help'))), field('on_limit', f.on_limit)),
  section('graph', h('div', { class: 'wf-edit' },
    h('div', { class: 'wf-tables' },
      h('h4', {}, t('nodes')),
      h('table', { id: 'wf-nodes', class: 'wf-table' }, h('thead', {}, h('tr', {}, [t('node_key'), t('job'), t('node_param'), t('join'), ''].map((x) => h('th', {}, x)))), nodeBody),
      addNode, nodesErr,
      h('h4', {}, t('edges')),
      h('table', { id: 'wf-edges', class: 'wf-table' }, h('thead', {}, h('tr', {}, [t('edge_from'), '', t('edge_to'), t('when'), ''].map((x) => h('th', {}, x)))), edgeBody),
      addEdge, edgesErr, keyList,
      h('p', { class: 'help' }, t('graph_help'))),
    h('div', { class: 'wf-side' }, drawing, edgeLegend()))),
  h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('save')), h('button', { type: 'button', onclick: () => go('#workflows') }, t('cancel'))), msg);
  root.replaceChildren(h('h2', {}, wf && wf.id ? `${t('workflows')} — #${wf.id} ${wf.name}` : t('new_workflow')), form);
  previewer(f.schedule_type, f.schedule_expr, f.time_zone, preview);
  // Show only the fields that apply: no expression without a schedule, no zone but for CRON.
  const toggle = () => {
    f.schedule_expr.closest('label').hidden = f.schedule_type.value === 'NONE';
    f.time_zone.closest('label').hidden = f.schedule_type.value !== 'CRON';
  };
  f.schedule_type.addEventListener('change', toggle);
  toggle();
  changed();
}

async function workflowList(root) {
  const body = h('tbody');
  const msg = h('div');
  let drawn = 0;
  const act = (fn) => async () => { try { await fn(); await draw(true); } catch (e) { msg.replaceChildren(errorBox(e)); } };
  const trigger = async (w) => {
    try { const r = await api('POST', `/v1/workflows/${w.id}/trigger`, { trigger_type: 'MANUAL' }); go(`#workflows/instance/${r.instance_id}`); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  const row = (w) => h('tr', { 'data-workflow': w.id },
    h('td', {}, w.id), h('td', { class: 'name' }, w.name), h('td', { class: 'desc' }, w.description),
    h('td', { class: 'schedule' }, scheduleText(w)), h('td', { class: 'nodes' }, w.definition.nodes.length),
    h('td', { class: w.running ? 'status ok' : 'status' }, w.running ? `▶ ${t('started')}` : `■ ${t('stopped')}`),
    h('td', { class: 'next-fire' }, w.running && w.next_fire_at > 0 ? fmtTime(w.next_fire_at, w.time_zone) : ''),
    h('td', { class: 'last-fire' }, fmtTime(w.last_fire_at, w.time_zone)),
    h('td', { class: 'row-actions' }, h('a', { href: `#workflows/instances/${w.id}`, class: 'wf-instances' }, t('instances')), ' ', actionMenu([
      // A workflow without a schedule only runs when triggered: the admin refuses to start it.
      w.running ? ['stop', act(() => api('POST', `/v1/workflows/${w.id}/stop`))] : (w.schedule_type !== 'NONE' ? ['start', act(() => api('POST', `/v1/workflows/${w.id}/start`))] : null),
      ['trigger_now', () => trigger(w)],
      ['edit', () => go(`#workflows/edit/${w.id}`)],
      ['copy', () => go(`#workflows/copy/${w.id}`)],
      ['instances', () => go(`#workflows/instances/${w.id}`)],
      // Refused (409) while an instance is queued or running: the message says so.
      ['remove', act(async () => { if (confirm(t('confirm_delete'))) await api('DELETE', `/v1/workflows/${w.id}`); })],
    ])));
  const draw = async () => {
    const seq = ++drawn;
    let got;
    try { got = await api('GET', '/v1/workflows'); } catch (e) { if (seq === drawn) msg.replaceChildren(errorBox(e)); return; }
    if (seq !== drawn) return;
    body.replaceChildren(...(got.length ? got.map(row) : [h('tr', {}, h('td', { colspan: '9', class: 'note' }, t('none')))]));
  };
  root.replaceChildren(h('h2', {}, t('workflows')),
    h('div', { class: 'filters' }, h('button', { id: 'new-workflow', type: 'button', onclick: () => go('#workflows/new') }, t('add')), h('span', { class: 'note' }, t('auto_refresh'))), msg,
    h('table', { id: 'workflows' }, h('thead', {}, h('tr', {}, ['#', t('name'), t('wf_description'), t('schedule'), t('nodes'), t('status'), t('next_fire'), t('last_fire'), ''].map((x) => h('th', {}, x)))), body));
  await draw();
  autoRefresh(root, draw);
}

async function instanceList(root, id) {
  const wf = await api('GET', `/v1/workflows/${id}`);
  const fs = sel('state', [['', `${t('status')}: ${t('all')}`], ...INSTANCE_STATES.map((s) => [s, t(`wfs_${s}`)])], '');
  const body = h('tbody');
  const msg = h('div');
  const PAGE = 100;
  const more = h('button', { type: 'button', id: 'more-instances', hidden: true }, t('more'));
  const zone = wf.time_zone;
  const row = (i) => h('tr', { 'data-instance': i.id }, h('td', {}, h('a', { href: `#workflows/instance/${i.id}` }, i.id)),
    h('td', { class: 'at' }, fmtTime(i.scheduled_at, zone)), h('td', {}, t(i.trigger_type)),
    h('td', { class: 'state', 'data-state': i.state }, h('span', { class: `badge wfs-${i.state}` }, t(`wfs_${i.state}`))),
    h('td', {}, fmtTime(i.finished_at, zone)), h('td', {}, i.stopped_by));
  let drawn = 0;
  let last;
  const page = (before, limit = PAGE) => {
    const q = new URLSearchParams({ workflow_id: String(id), limit: String(limit) });
    if (fs.value) q.set('state', fs.value);
    if (before) q.set('before_id', String(before));
    return api('GET', `/v1/workflow-instances?${q}`);
  };
  const show = (got, append, asked) => {
    if (append) body.append(...got.map(row)); else body.replaceChildren(...got.map(row));
    // A full page may have more behind it; the next page starts below its last id.
    more.hidden = got.length < asked;
    if (got.length) last = got[got.length - 1].id;
  };
  // `keep`: an automatic refresh, which reloads as many instances as are shown.
  const draw = async (keep) => {
    const seq = ++drawn;
    const limit = keep ? Math.min(1000, Math.max(PAGE, body.children.length)) : PAGE;
    let got;
    try { got = await page(undefined, limit); } catch (e) { if (seq === drawn) msg.replaceChildren(errorBox(e)); return; }
    if (seq !== drawn) return;
    msg.replaceChildren();
    show(got, false, limit);
  };
  more.addEventListener('click', async () => {
    const seq = drawn;
    try { const got = await page(last); if (seq === drawn) show(got, true, PAGE); } catch (e) { msg.replaceChildren(errorBox(e)); }
  });
  fs.addEventListener('change', () => draw(false));
  const trigger = async () => {
    try { const r = await api('POST', `/v1/workflows/${id}/trigger`, { trigger_type: 'MANUAL' }); go(`#workflows/instance/${r.instance_id}`); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  root.replaceChildren(h('h2', {}, `${t('instances')} — #${wf.id} ${wf.name}`),
    h('div', { class: 'filters' }, fs, h('button', { type: 'button', onclick: () => draw(false) }, t('refresh')),
      h('button', { type: 'button', id: 'trigger-workflow', onclick: trigger }, t('trigger_now')),
      h('button', { type: 'button', onclick: () => go(`#workflows/edit/${id}`) }, t('edit')),
      h('span', { class: 'note' }, t('auto_refresh'))), msg,
    h('table', { id: 'wf-instances' }, h('thead', {}, h('tr', {}, ['#', t('scheduled'), t('trigger_type'), t('status'), t('finished_at'), t('stopped_by')].map((x) => h('th', {}, x)))), body),
    more);
  await draw(false);
  autoRefresh(root, draw);
}

async function instanceView(root, id) {
  let inst = await api('GET', `/v1/workflow-instances/${id}`);
  const [wf] = await Promise.all([api('GET', `/v1/workflows/${inst.workflow_id}`).catch(() => null)]);
  const jobs = jobCache();
  await jobs.load(inst.definition.nodes.map((n) => n.job_id));
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
  let selected = null;
  // The instance's nodes by key; a node of the definition without one has not started.
  const runOf = (key) => inst.nodes.find((n) => n.node === key);
  const stateOf = (key) => (runOf(key) || { state: 'waiting' }).state;
  const select = (key) => { selected = key; draw(); };
  const act = async (fn) => {
    try { inst = await fn(); msg.replaceChildren(); draw(); poll(); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  const stop = h('button', { type: 'button', id: 'stop-instance', hidden: true, onclick: () => {
    if (confirm(t('confirm_stop_instance'))) act(() => api('POST', `/v1/workflow-instances/${id}/stop`));
  } }, t('stop'));
  const runLink = (r, short) => h('a', { href: `#runs/${r.run_id}`, class: 'run-link', title: t('node_run_link').replace('{id}', r.run_id) },
    short ? `#${r.run_id}` : t('node_run_link').replace('{id}', r.run_id));
  // The admin allows a node change only in a running or finished (not stopped) instance:
  // retry or mark succeeded a failed or stopped node, skip one that waits, failed or was not run.
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
  const nodeDetail = () => {
    const n = selected && inst.definition.nodes.find((x) => x.key === selected);
    if (!n) return [h('p', { class: 'note' }, t('click_node'))];
    const r = runOf(n.key);
    const s = stateOf(n.key);
    const row = (k, ...v) => h('tr', {}, h('th', {}, t(k)), h('td', {}, ...v));
    return [h('h3', {}, n.key), h('table', {},
      row('job', h('a', { href: `#jobs/edit/${n.job_id}` }, jobName(n.job_id))),
      row('status', h('span', { class: `state badge wfs-${s}`, 'data-state': s }, t(`wfs_${s}`))),
      n.param !== undefined ? row('node_param', h('span', { class: 'param' }, n.param)) : '',
      row('started_at', r ? fmtTime(r.started_at, zone) : ''), row('finished_at', r ? fmtTime(r.finished_at, zone) : ''),
      row('result', h('span', { class: 'result' }, lines(r ? r.result : ''))),
      row('run', r && r.run_id ? runLink(r) : '')),
    h('div', { class: 'form-actions' }, nodeActions(n.key))];
  };
  const nodeRow = (n) => {
    const r = runOf(n.key);
    const s = stateOf(n.key);
    return h('tr', { 'data-node': n.key, class: n.key === selected ? 'selected' : null },
      h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => select(n.key) }, n.key)), h('td', {}, jobName(n.job_id)),
      h('td', { class: 'state', 'data-state': s }, h('span', { class: `badge wfs-${s}` }, t(`wfs_${s}`))),
      h('td', {}, r ? fmtTime(r.started_at, zone) : ''), h('td', {}, r ? fmtTime(r.finished_at, zone) : ''),
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
  const name = wf ? `#${wf.id} ${wf.name}` : `#${inst.workflow_id}`;
  const info = (k, v) => h('tr', {}, h('th', {}, t(k)), v instanceof Node ? v : h('td', {}, v));
  root.replaceChildren(h('h2', {}, `${t('wf_instance')} #${inst.id} — ${name}`),
    h('div', { class: 'card' }, h('table', { id: 'wfi-detail' },
      info('workflow', h('td', {}, h('a', { href: `#workflows/instances/${inst.workflow_id}`, id: 'wfi-workflow' }, name))),
      info('status', h('td', {}, stateEl, ' ', live)), info('trigger_type', t(inst.trigger_type)),
      info('scheduled', fmtTime(inst.scheduled_at, zone)), info('created_at', fmtTime(inst.created_at, zone)),
      info('finished_at', finished), stoppedRow)),
    stop, h('button', { type: 'button', onclick: () => go(`#workflows/instances/${inst.workflow_id}`) }, t('instances_of')), msg,
    h('div', { class: 'wf-view' }, h('div', { class: 'wf-side' }, graph, stateLegend(), edgeLegend()), detail),
    h('table', { id: 'wfi-nodes' }, h('thead', {}, h('tr', {}, [t('node_key'), t('job'), t('status'), t('started_at'), t('finished_at'), t('result'), t('run')].map((x) => h('th', {}, x)))), nodeBody));
  draw();
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
  };
  poll();
}

async function workflows(root, args) {
  const [what, id] = args;
  if (what === 'new') return workflowForm(root, null);
  if (what === 'edit' || what === 'copy') {
    const wf = await api('GET', `/v1/workflows/${Number(id)}`);
    // A copy is the workflow without its id, stopped: the form saves it as a new one.
    return workflowForm(root, what === 'copy' ? { ...wf, id: undefined, name: `${wf.name} ${t('copy_suffix')}` } : wf);
  }
  if (what === 'instances') return instanceList(root, Number(id));
  if (what === 'instance') return instanceView(root, Number(id));
  return workflowList(root);
}

export const workflowPages = { workflows };
