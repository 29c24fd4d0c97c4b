// @ts-check
// The workflow drawing's layout (web/lib/layout.js), without a page: layers, no boxes on top
// of each other, every edge pointing down, long edges routed around the boxes between.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layout, BOX_W, VIA_W, GAP_X, GAP_Y, PAD } from '../../web/lib/layout.js';

/** @typedef {import('../../web/lib/layout.js').Layout} Layout */
/** @typedef {import('../../web/lib/layout.js').Edge} Edge */

const H = 44;

/**
 * The layer a node (or via) was put in, from its y.
 * @param {Layout} l
 * @param {import('../../web/lib/layout.js').Slot} k
 */
function layerOf(l, k) {
  const b = l.pos.get(k);
  assert.ok(b, `${JSON.stringify(k)} has a place`);
  const layer = (b.y - PAD) / (H + GAP_Y);
  assert.ok(Number.isInteger(layer), `${JSON.stringify(k)} sits on a layer: y ${b.y}`);
  return layer;
}

/** @param {Layout} l @param {string} k */
const centre = (l, k) => { const b = /** @type {{x: number, w: number}} */ (l.pos.get(k)); return b.x + b.w / 2; };

/**
 * No two slots of a layer overlap (each keeps the gap), and all lie inside the drawing.
 * @param {Layout} l
 */
function assertNoOverlaps(l) {
  /** @type {Map<number, Array<{x: number, w: number}>>} */
  const rows = new Map();
  for (const b of l.pos.values()) {
    assert.ok(b.x >= PAD - 1e-9 && b.x + b.w <= l.width - PAD + 1e-9, `inside the drawing: ${JSON.stringify(b)} in ${l.width}`);
    assert.ok(b.y >= PAD && b.y + H <= l.height - PAD, `inside the drawing: ${JSON.stringify(b)} in ${l.height}`);
    const row = rows.get(b.y) || [];
    row.push(b);
    rows.set(b.y, row);
  }
  for (const row of rows.values()) {
    row.sort((a, b) => a.x - b.x);
    for (let i = 1; i < row.length; i += 1) {
      assert.ok(row[i].x >= row[i - 1].x + row[i - 1].w + GAP_X - 1e-9, `boxes overlap: ${JSON.stringify(row[i - 1])} and ${JSON.stringify(row[i])}`);
    }
  }
}

/**
 * Every edge points down, through one via per layer it crosses, each a layer below the last.
 * @param {Layout} l
 * @param {Edge[]} edges
 */
function assertEdgesDown(l, edges) {
  edges.forEach((e, i) => {
    const [from, to] = [layerOf(l, e.from), layerOf(l, e.to)];
    assert.ok(to > from, `edge ${e.from} -> ${e.to} points down: layer ${from} to ${to}`);
    assert.equal(l.routes[i].length, to - from - 1, `edge ${e.from} -> ${e.to} has a via in each layer it crosses`);
    l.routes[i].forEach((v, j) => {
      assert.equal(layerOf(l, v), from + j + 1);
      assert.equal(l.pos.get(v)?.w, VIA_W);
    });
  });
}

/**
 * A layout of `keys` and edges `[from, to]`, checked for overlaps and edge directions.
 * @param {string[]} keys
 * @param {Array<[string, string]>} pairs
 */
function laidOut(keys, pairs) {
  const edges = pairs.map(([from, to]) => ({ from, to }));
  const l = layout(keys, edges, H);
  assertNoOverlaps(l);
  assertEdgesDown(l, edges);
  return l;
}

test('a chain is one node per layer, in order, one above the other', () => {
  const l = laidOut(['a', 'b', 'c'], [['a', 'b'], ['b', 'c']]);
  assert.deepEqual(['a', 'b', 'c'].map((k) => layerOf(l, k)), [0, 1, 2]);
  assert.equal(centre(l, 'a'), centre(l, 'c'));
  assert.equal(l.width, BOX_W + 2 * PAD);
  assert.equal(l.height, 3 * (H + GAP_Y) - GAP_Y + 2 * PAD);
});

test('a node is one layer below its deepest parent', () => {
  // d's parents are a (layer 0) and c (layer 2): d goes to layer 3, and a -> d passes two vias.
  const l = laidOut(['a', 'b', 'c', 'd'], [['a', 'b'], ['b', 'c'], ['c', 'd'], ['a', 'd']]);
  assert.deepEqual(['a', 'b', 'c', 'd'].map((k) => layerOf(l, k)), [0, 1, 2, 3]);
  const vias = l.routes[3];
  assert.equal(vias.length, 2);
  // The vias stand beside the boxes they pass, not on them (the overlap check says so too).
  for (const v of vias) assert.notEqual(l.pos.get(v)?.x, l.pos.get('b')?.x);
});

test('a diamond: two nodes side by side between the top and the bottom, which stand in the middle', () => {
  const l = laidOut(['a', 'b', 'c', 'd'], [['a', 'b'], ['a', 'c'], ['b', 'd'], ['c', 'd']]);
  assert.deepEqual(['a', 'b', 'c', 'd'].map((k) => layerOf(l, k)), [0, 1, 1, 2]);
  assert.ok(centre(l, 'b') < centre(l, 'c'), 'table order within a layer');
  assert.equal(centre(l, 'd'), (centre(l, 'b') + centre(l, 'c')) / 2);
  assert.equal(centre(l, 'a'), centre(l, 'd'));
  assert.equal(l.width, 2 * BOX_W + GAP_X + 2 * PAD);
});

test('a fan-out of 100: one layer of children under the root, in table order, none overlapping', () => {
  const kids = Array.from({ length: 100 }, (_, i) => `k${i}`);
  const l = laidOut(['root', ...kids], kids.map((k) => /** @type {[string, string]} */ (['root', k])));
  assert.equal(layerOf(l, 'root'), 0);
  for (const k of kids) assert.equal(layerOf(l, k), 1);
  const xs = kids.map((k) => /** @type {number} */ (l.pos.get(k)?.x));
  assert.deepEqual(xs, [...xs].sort((a, b) => a - b), 'children keep table order');
  assert.equal(l.width, 100 * BOX_W + 99 * GAP_X + 2 * PAD);
  assert.equal(l.height, 2 * (H + GAP_Y) - GAP_Y + 2 * PAD);
  // The root stands over the middle of its children.
  assert.equal(centre(l, 'root'), (centre(l, 'k0') + centre(l, 'k99')) / 2);
});

test('a long chain without a cycle: 500 layers, no vias', () => {
  const keys = Array.from({ length: 500 }, (_, i) => `n${i}`);
  const pairs = keys.slice(1).map((k, i) => /** @type {[string, string]} */ ([keys[i], k]));
  const l = laidOut(keys, pairs);
  keys.forEach((k, i) => assert.equal(layerOf(l, k), i));
  assert.equal(l.routes.flat().length, 0);
  assert.equal(l.height, 500 * (H + GAP_Y) - GAP_Y + 2 * PAD);
});

test('within a layer, nodes follow their parents, so edges do not cross', () => {
  // Table order puts c before d, but d's parent (a) stands left of c's (b).
  const l = laidOut(['a', 'b', 'c', 'd'], [['b', 'c'], ['a', 'd']]);
  assert.ok(centre(l, 'a') < centre(l, 'b'));
  assert.ok(centre(l, 'd') < centre(l, 'c'), 'd under a, c under b');
});

test('nodes on a cycle share one layer at the bottom, with room for the edges between them', () => {
  const edges = [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'b' }];
  const l = layout(['a', 'b', 'c'], edges, H);
  assertNoOverlaps(l);
  assert.deepEqual(['a', 'b', 'c'].map((k) => layerOf(l, k)), [0, 1, 1]);
  assert.equal(l.height, 2 * (H + GAP_Y) - GAP_Y + 2 * PAD + GAP_Y);
});

test('an edge to no node, or to its own node, takes no part', () => {
  const edges = [{ from: 'a', to: 'zzz' }, { from: 'a', to: 'a' }, { from: 'a', to: 'b' }];
  const l = layout(['a', 'b'], edges, H);
  assert.deepEqual(l.routes.map((r) => r.length), [0, 0, 0]);
  assert.deepEqual([layerOf(l, 'a'), layerOf(l, 'b')], [0, 1]);
  assert.equal(l.pos.size, 2);
});

test('random graphs without cycles: no overlaps, every edge down through its vias', () => {
  // A fixed seed: the same graphs every run.
  let seed = 42;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  for (let round = 0; round < 50; round += 1) {
    const n = 2 + Math.floor(rand() * 30);
    const keys = Array.from({ length: n }, (_, i) => `n${i}`);
    /** @type {Array<[string, string]>} */
    const pairs = [];
    // Edges only from a lower index to a higher one: never a cycle.
    for (let i = 0; i < n; i += 1) for (let j = i + 1; j < n; j += 1) if (rand() < 0.15) pairs.push([keys[i], keys[j]]);
    const l = laidOut(keys, pairs);
    assert.equal(l.pos.size, n + l.routes.flat().length, 'a place for every node and via');
  }
});
