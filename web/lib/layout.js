// @ts-check
// Where the boxes of a workflow's drawing go: a pure function of the graph, so it is tested
// under Node (tests/console/layout.test.mjs) without a page.

/** A box's width. */
export const BOX_W = 168;
/** The width of the slot a long edge takes in each layer it crosses. */
export const VIA_W = 8;
/** The room between two slots of a layer. */
export const GAP_X = 28;
/** The room between two layers. */
export const GAP_Y = 48;
/** The margin around the drawing. */
export const PAD = 12;

/**
 * An edge of the graph, between two node keys.
 * @typedef {{from: string, to: string}} Edge
 */
/**
 * A point a long edge passes in a layer between its ends: an object, so it never clashes
 * with a key typed in the form.
 * @typedef {{via: true}} Via
 */
/** @typedef {string | Via} Slot */
/** @typedef {{x: number, y: number, w: number}} Box */
/**
 * @typedef {object} Layout
 * @property {Map<Slot, Box>} pos where each node (by key) and each via goes
 * @property {Via[][]} routes for each edge, in order, the vias it passes, top down
 * @property {number} width
 * @property {number} height
 */

/**
 * Where each node goes in a layered drawing, top to bottom. A node's layer is the longest path
 * to it from a root, so every edge points down and parents sit above all their children. An
 * edge that spans several layers passes through a narrow slot of its own in each layer between
 * (a "via"), so it bends around the boxes rather than through them. Within a layer, nodes and
 * vias are ordered by the mean position of their parents (fewer crossings), ties in table
 * order. Nodes on a cycle (the server refuses those) never get a layer that way: they share
 * one extra layer at the bottom, so the drawing still shows them.
 * An edge to or from no node of `keys`, or from a node to itself, takes no part (and no vias).
 * @param {string[]} keys distinct node keys in table order
 * @param {Edge[]} edges
 * @param {number} boxH a box's height
 * @returns {Layout}
 */
export function layout(keys, edges, boxH) {
  /** @type {Map<string, string[]>} */
  const children = new Map(keys.map((k) => [k, []]));
  /** @type {Map<string, number>} */
  const indegree = new Map(keys.map((k) => [k, 0]));
  /** @param {Edge} e */
  const drawn = (e) => children.has(e.from) && children.has(e.to) && e.from !== e.to;
  for (const e of edges.filter(drawn)) {
    /** @type {string[]} */ (children.get(e.from)).push(e.to);
    indegree.set(e.to, Number(indegree.get(e.to)) + 1);
  }
  // Kahn's order: a node is placed once all its parents are, one layer below the lowest.
  /** @type {Map<Slot, number>} */
  const layer = new Map();
  const order = keys.filter((k) => indegree.get(k) === 0);
  for (const k of order) layer.set(k, 0);
  for (let i = 0; i < order.length; i += 1) {
    for (const c of /** @type {string[]} */ (children.get(order[i]))) {
      layer.set(c, Math.max(layer.get(c) ?? 0, Number(layer.get(order[i])) + 1));
      indegree.set(c, Number(indegree.get(c)) - 1);
      if (indegree.get(c) === 0) order.push(c);
    }
  }
  const placed = new Set(order);
  const stuck = keys.filter((k) => !placed.has(k));
  const deepest = Math.max(-1, ...order.map((k) => Number(layer.get(k))));
  for (const k of stuck) layer.set(k, deepest + 1);
  /** @type {Map<Slot, number>} */
  const width = new Map(keys.map((k) => [k, BOX_W]));
  /** @type {Map<Slot, Slot[]>} */
  const parents = new Map(keys.map((k) => [k, []]));
  const routes = edges.map((e) => {
    /** @type {Via[]} */
    const via = [];
    if (!drawn(e)) return via;
    /** @type {Slot} */
    let above = e.from;
    for (let l = Number(layer.get(e.from)) + 1; l < Number(layer.get(e.to)); l += 1) {
      /** @type {Via} */
      const v = { via: true };
      layer.set(v, l); width.set(v, VIA_W); parents.set(v, [above]);
      via.push(v);
      above = v;
    }
    /** @type {Slot[]} */ (parents.get(e.to)).push(above);
    return via;
  });
  /** @type {Slot[][]} */
  const rows = [];
  for (const k of [...keys, ...routes.flat()]) (rows[Number(layer.get(k))] ||= []).push(k);
  /** @param {Slot[]} row */
  const rowWidth = (row) => row.reduce((a, k) => a + Number(width.get(k)), 0) + GAP_X * (row.length - 1);
  const widest = Math.max(BOX_W, ...rows.map(rowWidth));
  /** @type {Map<Slot, Box>} */
  const pos = new Map();
  rows.forEach((row, i) => {
    /** @type {Map<Slot, number>} */
    const mean = new Map(row.map((k) => {
      const xs = /** @type {Slot[]} */ (parents.get(k)).map((p) => pos.get(p)).filter((b) => b !== undefined).map((b) => b.x + b.w / 2);
      return [k, xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Infinity];
    }));
    // Stable: ties (Infinity for roots) keep table order.
    row.sort((a, b) => { const [ma, mb] = [Number(mean.get(a)), Number(mean.get(b))]; return ma === mb ? 0 : ma < mb ? -1 : 1; });
    let x = PAD + (widest - rowWidth(row)) / 2;
    for (const k of row) {
      const w = Number(width.get(k));
      pos.set(k, { x, y: PAD + i * (boxH + GAP_Y), w });
      x += w + GAP_X;
    }
  });
  // Edges within the cycle layer curve below it: room for them.
  const height = rows.length * (boxH + GAP_Y) - GAP_Y + 2 * PAD + (stuck.length ? GAP_Y : 0);
  return { pos, routes, width: widest + 2 * PAD, height };
}
