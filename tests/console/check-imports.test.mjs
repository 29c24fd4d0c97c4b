// @ts-check
// The import rules of check-imports.mjs: on small consoles made for each case, and on web/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkImports, importsOf } from './check-imports.mjs';

/**
 * A console of the given modules (path → source) in a fresh folder; the problems found in it.
 * @param {Record<string, string>} files
 */
function problemsOf(files) {
  const dir = mkdtempSync(join(tmpdir(), 'chime-imports-'));
  try {
    for (const [path, source] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), source);
    }
    return checkImports(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const GOOD = {
  'app.js': "import { page } from './pages/one.js';\nimport { t } from './i18n.js';\n",
  'i18n.js': 'export const t = (k) => k;\n',
  'pages/one.js': "import { h } from '../lib/dom.js';\nimport {\n  t,\n} from '../i18n.js';\nexport const page = 1;\n",
  'lib/dom.js': "import { t } from '../i18n.js';\nexport const h = 1;\n",
};

test('import lines are read in all their forms, comments skipped', () => {
  const src = "import a from './a.js';\nimport {\n  b,\n  c as d,\n} from \"./b.js\";\nimport './c.js';\nexport { e } from './e.js';\nexport * from './f.js';\n// import x from './x.js';\n/* import y from './y.js'; */\nconst s = 'import z from \"./z.js\"';\n";
  assert.deepEqual(importsOf(src), ['./a.js', './b.js', './c.js', './e.js', './f.js']);
});

test('a console whose imports point down passes', () => {
  assert.deepEqual(problemsOf(GOOD), []);
});

test('an import cycle fails, named module by module', () => {
  const problems = problemsOf({ ...GOOD, 'lib/dom.js': "import { x } from './x.js';\nexport const h = 1;\n", 'lib/x.js': "import { h } from './dom.js';\nexport const x = 1;\n" });
  assert.deepEqual(problems, ['import cycle: lib/dom.js → lib/x.js → lib/dom.js']);
});

test('lib importing a page, a page importing a page or the router, fail', () => {
  assert.deepEqual(problemsOf({ ...GOOD, 'lib/dom.js': "import { page } from '../pages/one.js';\nexport const h = 1;\n" }), [
    'lib/dom.js (lib) imports pages/one.js (page): imports point down, app → pages → lib',
    'import cycle: pages/one.js → lib/dom.js → pages/one.js',
  ]);
  assert.deepEqual(problemsOf({ ...GOOD, 'pages/two.js': "import { page } from './one.js';\n", 'app.js': `${GOOD['app.js']}import './pages/two.js';\n` }),
    ['pages/two.js imports another page (pages/one.js): move what they share to web/lib/']);
  assert.deepEqual(problemsOf({ ...GOOD, 'pages/one.js': "import '../app.js';\nimport '../lib/dom.js';\nexport const page = 1;\n" }), [
    'pages/one.js imports the router (app.js): the router imports pages, not the other way round',
    'import cycle: app.js → pages/one.js → app.js',
  ]);
});

test('an import of no module, without .js or not relative fails; so does a module nothing loads', () => {
  assert.deepEqual(problemsOf({ ...GOOD, 'lib/dom.js': "import a from './gone.js';\nimport b from './util';\nimport c from 'lodash';\nexport const h = 1;\n", 'lib/dead.js': 'export const d = 1;\n' }), [
    "lib/dom.js imports './gone.js', which is no module under web/",
    "lib/dom.js imports './util': name the file with its .js",
    "lib/dom.js imports 'lodash': only relative paths load in the browser",
    'lib/dead.js is imported by nothing the router loads',
  ]);
});

test("the console's own modules keep the rules", () => {
  const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
  assert.deepEqual(checkImports(web), []);
});
