// @ts-check
// The console's import rules, checked from the `import … from` lines of every module under
// web/ (run by scripts/test; `node check-imports.mjs [dir]`):
// - imports point down: web/lib/ and web/i18n.js import only lib modules and i18n.js; a page
//   (web/pages/) imports those too, never another page or the router; nothing imports app.js;
// - no module imports itself through others (no import cycle);
// - every import names a module that exists, by a relative path ending in `.js` (the browser
//   loads it by that URL: there is no bundler to find it otherwise);
// - every module is reachable from app.js (a module nothing imports is dead code the admin
//   still embeds and serves).
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve, dirname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The modules of a static import or re-export: `import x from '…'`, `import {a, b} from '…'`
 * (over several lines too), `import '…'` and `export … from '…'`. Comments are skipped, so a
 * commented-out import counts for nothing. Dynamic `import()` is not followed.
 * @param {string} source
 * @returns {string[]}
 */
export function importsOf(source) {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const re = /(?:^|[;\n])\s*(?:import|export)\s+(?:[\w$*{}\s,]+?\s+from\s+)?['"]([^'"]+)['"]/g;
  return [...code.matchAll(re)].map((m) => m[1]);
}

/**
 * Every `.js` file under `dir`, as a path relative to it with `/` separators.
 * @param {string} dir
 * @returns {string[]}
 */
function modulesUnder(dir) {
  /** @type {string[]} */
  const out = [];
  /** @param {string} d */
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) out.push(relative(dir, p).split(sep).join('/'));
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * The layer of a module: `app` (the router), `page`, `lib` (lib/ and i18n.js), or `other`.
 * @param {string} mod
 */
export function layerOf(mod) {
  if (mod === 'app.js') return 'app';
  if (mod.startsWith('pages/')) return 'page';
  if (mod.startsWith('lib/') || mod === 'i18n.js') return 'lib';
  return 'other';
}

/** What each layer may import. @type {Record<string, string[]>} */
const ALLOWED = { app: ['page', 'lib'], page: ['lib'], lib: ['lib'], other: [] };

/**
 * An import cycle of `graph`, as the modules on it (the first repeated at the end), or null.
 * @param {Map<string, string[]>} graph
 * @returns {string[] | null}
 */
export function findCycle(graph) {
  /** @type {Map<string, 'open' | 'done'>} */
  const state = new Map();
  /** @type {string[]} */
  const path = [];
  /** @param {string} m @returns {string[] | null} */
  const visit = (m) => {
    state.set(m, 'open');
    path.push(m);
    for (const next of graph.get(m) || []) {
      if (state.get(next) === 'open') return [...path.slice(path.indexOf(next)), next];
      if (!state.has(next)) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(m, 'done');
    return null;
  };
  for (const m of graph.keys()) {
    if (state.has(m)) continue;
    const found = visit(m);
    if (found) return found;
  }
  return null;
}

/**
 * What breaks the import rules in the console at `dir`, one sentence each; empty when none.
 * @param {string} dir the console's folder (web/)
 * @returns {string[]}
 */
export function checkImports(dir) {
  /** @type {string[]} */
  const problems = [];
  const modules = modulesUnder(dir);
  /** @type {Map<string, string[]>} */
  const graph = new Map();
  for (const mod of modules) {
    /** @type {string[]} */
    const targets = [];
    for (const spec of importsOf(readFileSync(join(dir, mod), 'utf8'))) {
      if (!spec.startsWith('./') && !spec.startsWith('../')) { problems.push(`${mod} imports '${spec}': only relative paths load in the browser`); continue; }
      if (!spec.endsWith('.js')) { problems.push(`${mod} imports '${spec}': name the file with its .js`); continue; }
      const target = relative(dir, resolve(dir, dirname(mod), spec)).split(sep).join('/');
      if (!modules.includes(target)) { problems.push(`${mod} imports '${spec}', which is no module under web/`); continue; }
      const [from, to] = [layerOf(mod), layerOf(target)];
      if (to === 'app') problems.push(`${mod} imports the router (${target}): the router imports pages, not the other way round`);
      else if (from === 'page' && to === 'page') problems.push(`${mod} imports another page (${target}): move what they share to web/lib/`);
      else if (!ALLOWED[from].includes(to)) problems.push(`${mod} (${from}) imports ${target} (${to}): imports point down, app → pages → lib`);
      targets.push(target);
    }
    graph.set(mod, targets);
  }
  const cycle = findCycle(graph);
  if (cycle) problems.push(`import cycle: ${cycle.join(' → ')}`);
  // Reachable from the router: what the browser loads.
  const seen = new Set();
  const todo = modules.includes('app.js') ? ['app.js'] : [];
  while (todo.length) {
    const m = /** @type {string} */ (todo.pop());
    if (seen.has(m)) continue;
    seen.add(m);
    todo.push(...(graph.get(m) || []));
  }
  if (!modules.includes('app.js')) problems.push('no app.js: the console has no router');
  for (const m of modules) if (!seen.has(m) && layerOf(m) !== 'other') problems.push(`${m} is imported by nothing the router loads`);
  for (const m of modules) if (layerOf(m) === 'other') problems.push(`${m} is neither the router, a page (pages/) nor lib (lib/, i18n.js)`);
  return problems;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const here = dirname(fileURLToPath(import.meta.url));
  const dir = resolve(process.argv[2] || join(here, '..', '..', 'web'));
  const problems = checkImports(dir);
  for (const p of problems) console.error(`check-imports: ${p}`);
  if (problems.length) process.exit(1);
  console.log(`check-imports: ${modulesUnder(dir).length} modules under ${relative(process.cwd(), dir) || '.'}, imports point down, no cycle`);
}
