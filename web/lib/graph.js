// @ts-check
// The drawing of a workflow's graph in SVG, laid out by `layout.js`. As everywhere in the
// console, data reaches it as text nodes and attributes only.
import { h, svg } from './dom.js';
import { layout, BOX_W, GAP_Y } from './layout.js';
import { t } from '../i18n.js';

/** An edge's conditions, in the order the form offers them. */
export const WHEN = ['success', 'failure', 'always'];
/** A node's states; a node of the definition without a state has not started: waiting. */
export const NODE_STATES = ['waiting', 'running', 'succeeded', 'failed', 'skipped', 'not_run', 'stopped'];

/**
 * `text` cut to `n` characters: a box has a fixed width; the full text is in its tooltip.
 * @param {unknown} text
 * @param {number} n
 */
const clip = (text, n) => { const c = [...String(text)]; return c.length > n ? `${c.slice(0, n - 1).join('')}…` : c.join(''); };

/**
 * @typedef {object} DrawOptions
 * @property {(id: number) => string} [job] names a node's job
 * @property {(key: string) => string} [state] in an instance, a node's state (the boxes are coloured by it)
 * @property {(key: string) => void} [onselect] makes the boxes clickable
 * @property {string | null} [selected] the key drawn as chosen
 */

/**
 * The drawing of a graph: `nodes` `[{key, job_id}]` and `edges` `[{from, to, when}]`. An edge
 * whose ends are not both nodes is left out (its table row stays, and saving names it), as is
 * a second node of the same key.
 * @param {Array<{key: string, job_id: number}>} nodes
 * @param {Array<{from: string, to: string, when?: string}>} edges
 * @param {DrawOptions} [opts]
 * @returns {Element}
 */
export function drawGraph(nodes, edges, opts = {}) {
  const seen = new Set();
  const list = nodes.filter((n) => n.key && !seen.has(n.key) && seen.add(n.key));
  if (!list.length) return h('p', { class: 'note', id: 'wf-graph-empty' }, t('graph_empty'));
  const shown = edges.filter((e) => seen.has(e.from) && seen.has(e.to) && e.from !== e.to);
  const boxH = opts.state ? 58 : 44;
  const { pos, routes, width, height } = layout(list.map((n) => n.key), shown, boxH);
  /** @param {import('./layout.js').Slot} k */
  const at = (k) => /** @type {import('./layout.js').Box} */ (pos.get(k));
  // One arrowhead per kind of edge, coloured like its line.
  const defs = svg('defs', {}, WHEN.map((w) => svg('marker', { id: `wf-arrow-${w}`, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    svg('path', { d: 'M0,0 L10,5 L0,10 z', class: `wf-arrow when-${w}` }))));
  const out = svg('svg', { id: 'wf-graph', class: 'wf-graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': t('graph') }, defs);
  // A vertical S-curve: leaves and arrives vertically, so arrowheads point down.
  /** @param {number} x1 @param {number} y1 @param {number} x2 @param {number} y2 */
  const curve = (x1, y1, x2, y2) => { const m = (y2 - y1) / 2; return ` C${x1},${y1 + m} ${x2},${y2 - m} ${x2},${y2}`; };
  shown.forEach((e, i) => {
    const when = WHEN.includes(e.when || '') ? e.when : 'success';
    const a = at(e.from);
    const b = at(e.to);
    let x = a.x + BOX_W / 2;
    let y = a.y + boxH;
    let d = `M${x},${y}`;
    if (b.y > a.y) {
      // From the parent's bottom, down through the edge's vias, to the child's top.
      for (const v of routes[i]) {
        const p = at(v);
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
    const p = at(n.key);
    const st = opts.state ? opts.state(n.key) : null;
    const job = opts.job ? opts.job(n.job_id) : '';
    const g = svg('g', { class: ['wf-node', st ? `wfs-${st}` : '', opts.selected === n.key ? 'selected' : ''].filter(Boolean).join(' '), 'data-key': n.key, 'data-state': st, transform: `translate(${p.x},${p.y})` },
      svg('title', {}, [n.key, job, st ? t(`wfs_${st}`) : ''].filter(Boolean).join(' — ')),
      svg('rect', { width: BOX_W, height: boxH, rx: 6 }),
      svg('text', { x: 10, y: 18, class: 'wf-key' }, clip(n.key, 18)),
      svg('text', { x: 10, y: 35, class: 'wf-job' }, clip(job, 22)),
      st ? svg('text', { x: 10, y: 51, class: 'wf-state' }, t(`wfs_${st}`)) : '');
    const onselect = opts.onselect;
    if (onselect) {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.addEventListener('click', () => onselect(n.key));
      g.addEventListener('keydown', (ev) => { if (/** @type {KeyboardEvent} */ (ev).key === 'Enter' || /** @type {KeyboardEvent} */ (ev).key === ' ') { ev.preventDefault(); onselect(n.key); } });
    }
    out.append(g);
  }
  return out;
}

/** What the line styles of the drawing mean. */
export const edgeLegend = () => h('div', { class: 'legend wf-legend' }, WHEN.map((w) => [h('span', { class: `line when-${w}` }), t(`when_${w}`)]));
/** What the colours of an instance's drawing mean. */
export const stateLegend = () => h('div', { class: 'legend wf-legend' }, NODE_STATES.map((s) => [h('span', { class: `chip wfs-${s}` }), t(`wfs_${s}`)]));
