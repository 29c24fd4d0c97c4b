// @ts-check
// The Queue page (web/pages/queue.js) in jsdom's DOM against a stand-in for the admin's API:
// the limits and the queue as listed, the requests its buttons and forms make (paths encoded,
// confirmation first, the CSRF token sent), what a viewer is offered, and a refresh that
// leaves a maximum being edited as the user typed it.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('<!doctype html><html><body><main id="main"></main></body></html>', { url: 'http://127.0.0.1/console/#queue' });
// The modules use the browser's globals: give them jsdom's before they load.
for (const name of /** @type {const} */ (['window', 'document', 'Node', 'HTMLElement', 'HTMLInputElement', 'HTMLSelectElement', 'localStorage', 'navigator', 'location', 'Event'])) {
  Object.defineProperty(globalThis, name, { value: window[name], configurable: true, writable: true });
}
// The page refreshes itself on a timer: the timer must not keep the test process alive.
const realSetInterval = globalThis.setInterval;
Object.defineProperty(globalThis, 'setInterval', {
  configurable: true, writable: true,
  value: (/** @type {() => void} */ fn, /** @type {number} */ ms) => { const timer = realSetInterval(fn, ms); timer.unref(); return timer; },
});

/** What the user answers to `confirm`, and the questions asked. */
let confirmAnswer = true;
/** @type {string[]} */
const asked = [];
Object.defineProperty(globalThis, 'confirm', { configurable: true, writable: true, value: (/** @type {string} */ q) => { asked.push(q); return confirmAnswer; } });

/**
 * The requests the page made.
 * @type {Array<{method: string, path: string, body: any, csrf: string | undefined}>}
 */
let requests = [];
/** @type {{limits: any[], queue: any[], executors: any[]}} */
let server;
/** An answer to give instead, by `METHOD path`. @type {Map<string, {status: number, body: any}>} */
let failures = new Map();

Object.defineProperty(globalThis, 'fetch', {
  configurable: true, writable: true,
  value: async (/** @type {string} */ path, /** @type {any} */ init = {}) => {
    const method = init.method || 'GET';
    requests.push({ method, path, body: init.body ? JSON.parse(init.body) : undefined, csrf: init.headers && init.headers['X-CSRF-Token'] });
    const failure = failures.get(`${method} ${path}`);
    /** @type {{status: number, body: any}} */
    let answer = failure || { status: 404, body: { error: 'not found' } };
    if (!failure) {
      if (method === 'GET' && path === '/v1/limits') answer = { status: 200, body: server.limits };
      else if (method === 'GET' && path === '/v1/queue') answer = { status: 200, body: server.queue };
      else if (method === 'GET' && path === '/v1/executors') answer = { status: 200, body: server.executors };
      else if (method === 'PUT' && path.startsWith('/v1/limits/')) answer = { status: 200, body: {} };
      else if (method === 'DELETE' && path.startsWith('/v1/limits/')) answer = { status: 204, body: null };
      else if (method === 'POST' && /^\/v1\/runs\/\d+\/(run-now|cancel)$/.test(path)) answer = { status: 200, body: {} };
    }
    const text = answer.body === null ? '' : JSON.stringify(answer.body);
    return { status: answer.status, ok: answer.status < 300, statusText: String(answer.status), text: async () => text };
  },
});

const { setUser } = await import('../../web/lib/session.js');
const { setLang } = await import('../../web/i18n.js');
const { queue } = await import('../../web/pages/queue.js');

const ADMIN = { username: 'admin', admin: true, can_write: true, group_ids: [], csrf_token: 'csrf-1' };
/** An operator of group 1 who only views group 2. */
const OPERATOR = { username: 'sam', admin: false, can_write: true, group_ids: [1, 2], csrf_token: 'csrf-2',
  group_roles: [{ group_id: 1, role: 'operator' }, { group_id: 2, role: 'viewer' }] };

/** @param {number} run_id @param {number} position @param {Partial<any>} [more] */
const queued = (run_id, position, more = {}) => ({
  run_id, job_id: 40 + run_id, group_id: 1, description: `job of ${run_id}`, waits_on: 'warehouse-db', priority: 0,
  queued_at: 1_700_000_000_000, waited_ms: 200_000, position, skip_queue: false, leaving: false, ...more,
});

beforeEach(() => {
  setLang('en');
  requests = [];
  asked.length = 0;
  confirmAnswer = true;
  failures = new Map();
  server = {
    limits: [
      { name: 'warehouse-db', max_running: 1, running: 1, queued: 2, updated_at: 1 },
      { name: 'executor:http://10.0.0.5:9999', max_running: 4, running: 5, queued: 0, updated_at: 1 },
    ],
    queue: [queued(7, 1, { priority: 10 }), queued(5, 2, { group_id: 2 }), queued(9, 3, { skip_queue: true })],
    executors: [{ app_name: 'billing', executors: [{ address: 'http://10.0.0.5:9999' }] }],
  };
});

/** Waits until `cond` holds (the page's requests are answered on later turns of the loop). @param {() => boolean} cond @param {string} what */
async function until(cond, what) {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The page drawn for `user`, in a fresh root. @param {any} user */
async function page(user) {
  setUser(user);
  const root = window.document.createElement('div');
  window.document.body.replaceChildren(root);
  await queue(root);
  return root;
}

/** @param {Element} root @param {string} sel */
const texts = (root, sel) => [...root.querySelectorAll(sel)].map((e) => (e.textContent || '').trim());
/** @param {Element} root @param {string} sel */
const one = (root, sel) => /** @type {HTMLElement} */ (root.querySelector(sel));
/** @param {Element} form */
const submit = (form) => form.dispatchEvent(new window.Event('submit', { cancelable: true }));

test('the limits with their load, and the queue in the order it will go', async () => {
  const root = await page(ADMIN);
  assert.deepEqual(texts(root, '#limits tbody td.name'), ['warehouse-db', 'executor:http://10.0.0.5:9999']);
  assert.deepEqual(texts(root, '#limits tbody td.load'), ['1 / 1', '5 / 4']);
  assert.deepEqual([...root.querySelectorAll('#limits tbody td.load')].map((td) => td.className), ['load limit-full', 'load limit-over']);
  assert.deepEqual(texts(root, '#limits tbody td.queued'), ['2', '0']);
  assert.deepEqual(texts(root, '#limits tbody tr td:nth-child(2)'), ['Concurrency key', 'Executor']);
  assert.deepEqual(texts(root, '#queue tbody td.position'), ['1', '2', '3']);
  assert.deepEqual([...root.querySelectorAll('#queue tbody td.run a')].map((a) => a.getAttribute('href')), ['#runs/7', '#runs/5', '#runs/9']);
  assert.deepEqual(texts(root, '#queue tbody td.job'), ['#47 job of 7', '#45 job of 5', '#49 job of 9']);
  assert.deepEqual(texts(root, '#queue tbody td.waited'), ['3 min 20 s', '3 min 20 s', '3 min 20 s']);
  assert.deepEqual(texts(root, '#queue tbody td.priority'), ['10', '0', '0']);
  assert.equal(one(root, '#queue tbody td.priority').title, 'With its wait: 13');
  assert.deepEqual(texts(root, '#queue tbody td.state'), ['waiting', 'waiting', 'goes next round']);
  assert.equal(one(root, '#queue-count').textContent, '3');
  // A run already sent on cannot be sent on again; it can still be cancelled.
  const last = one(root, '#queue tr[data-run="9"]');
  assert.equal(/** @type {HTMLButtonElement} */ (last.querySelector('button.run-now')).disabled, true);
  assert.equal(/** @type {HTMLButtonElement} */ (last.querySelector('button.cancel-run')).disabled, false);
});

test('data reaches the page as text: markup in a job description or a limit name stays text', async () => {
  server.queue = [queued(3, 1, { description: '<img src=x onerror="window.__xss=1">' })];
  server.limits = [{ name: '<b>x</b>', max_running: 1, running: 0, queued: 0, updated_at: 1 }];
  const root = await page(ADMIN);
  assert.equal(root.querySelectorAll('img, b').length, 0);
  assert.equal(texts(root, '#queue td.job')[0], '#43 <img src=x onerror="window.__xss=1">');
});

test('Cancel and Run now ask first, then post to the run, with the CSRF token, and draw the queue again', async () => {
  const root = await page(ADMIN);
  confirmAnswer = false;
  one(root, '#queue tr[data-run="5"] button.cancel-run').click();
  assert.deepEqual(asked, ['Cancel run #5? It ends as killed and is never sent.']);
  assert.ok(!requests.some((r) => r.method === 'POST'), 'nothing is sent when the user says no');
  confirmAnswer = true;
  requests = [];
  server.queue = [queued(7, 1), queued(9, 2, { skip_queue: true })];
  one(root, '#queue tr[data-run="5"] button.cancel-run').click();
  await until(() => root.querySelectorAll('#queue tbody tr').length === 2, 'the queue drawn again');
  assert.deepEqual(requests.filter((r) => r.method === 'POST').map((r) => [r.path, r.csrf]), [['/v1/runs/5/cancel', 'csrf-1']]);
  assert.equal(one(root, '#queue-msg').textContent, 'Run #5 cancelled.');
  requests = [];
  one(root, '#queue tr[data-run="7"] button.run-now').click();
  await until(() => requests.some((r) => r.path === '/v1/queue'), 'the queue asked again');
  assert.equal(asked.at(-1), 'Send run #7 now, over its limits?');
  assert.deepEqual(requests.filter((r) => r.method === 'POST').map((r) => r.path), ['/v1/runs/7/run-now']);
  // A run that left the queue meanwhile: the admin's 409 is shown.
  failures.set('POST /v1/runs/9/cancel', { status: 409, body: { error: 'run 9 is not waiting in the queue' } });
  one(root, '#queue tr[data-run="9"] button.cancel-run').click();
  await until(() => (one(root, '#queue-msg').textContent || '').includes('not waiting'), 'the refusal shown');
  assert.ok(one(root, '#queue-msg .err'));
});

test("an administrator sets a limit's maximum in its row and deletes a limit, its name encoded in the path", async () => {
  const root = await page(ADMIN);
  const row = one(root, '#limits tr[data-limit="executor:http://10.0.0.5:9999"]');
  const input = /** @type {HTMLInputElement} */ (row.querySelector('input[name=max_running]'));
  assert.equal(input.value, '4');
  input.value = '6';
  submit(/** @type {Element} */ (row.querySelector('form.limit-max')));
  await until(() => requests.some((r) => r.method === 'PUT'), 'the limit set');
  assert.deepEqual(requests.filter((r) => r.method === 'PUT').map((r) => [r.path, r.body, r.csrf]),
    [['/v1/limits/executor%3Ahttp%3A%2F%2F10.0.0.5%3A9999', { max_running: 6 }, 'csrf-1']]);
  confirmAnswer = false;
  /** @type {HTMLElement} */ (row.querySelector('button.delete-limit')).click();
  assert.equal(asked.at(-1), 'Delete the limit executor:http://10.0.0.5:9999? The runs waiting on it go on.');
  assert.ok(!requests.some((r) => r.method === 'DELETE'));
  confirmAnswer = true;
  server.limits = server.limits.slice(0, 1);
  /** @type {HTMLElement} */ (row.querySelector('button.delete-limit')).click();
  await until(() => root.querySelectorAll('#limits tbody tr').length === 1, 'the limit gone from the list');
  assert.deepEqual(requests.filter((r) => r.method === 'DELETE').map((r) => r.path), ['/v1/limits/executor%3Ahttp%3A%2F%2F10.0.0.5%3A9999']);
});

test('the add form makes the name from the kind, and a refusal goes next to the name', async () => {
  const root = await page(ADMIN);
  const form = one(root, '#limit-form');
  const kind = /** @type {HTMLSelectElement} */ (form.querySelector('select[name=limit_kind]'));
  const name = /** @type {HTMLInputElement} */ (form.querySelector('input[name=name]'));
  const max = /** @type {HTMLInputElement} */ (form.querySelector('input[name=max_running]'));
  assert.deepEqual([...kind.options].map((o) => o.value), ['key', 'group', 'executor']);
  kind.value = 'group';
  kind.dispatchEvent(new window.Event('change'));
  // Suggested: the groups' app names for a group limit, their executors' addresses for an executor's.
  await until(() => [...root.querySelectorAll('#limit-names option')].some((o) => o.getAttribute('value') === 'billing'), 'the app names suggested');
  name.value = ' billing ';
  max.value = '2';
  submit(form);
  await until(() => requests.some((r) => r.method === 'PUT'), 'the limit added');
  assert.deepEqual(requests.filter((r) => r.method === 'PUT').map((r) => [r.path, r.body]), [['/v1/limits/group%3Abilling', { max_running: 2 }]]);
  await until(() => name.value === '', 'the name field emptied after the save');
  kind.value = 'key';
  name.value = 'bad name';
  failures.set('PUT /v1/limits/bad%20name', { status: 422, body: { error: 'must be a concurrency key', field: 'name' } });
  submit(form);
  await until(() => !!form.querySelector('.field-err'), 'the refusal next to the field');
  assert.equal(form.querySelector('.field-err')?.textContent, 'must be a concurrency key');
  assert.equal(name.getAttribute('aria-invalid'), 'true');
});

test('a refresh updates the counts but leaves a maximum being edited as the user typed it', async () => {
  const root = await page(ADMIN);
  const inputOf = (/** @type {string} */ n) => /** @type {HTMLInputElement} */ (root.querySelector(`#limits tr[data-limit="${n}"] input[name=max_running]`));
  const edited = inputOf('warehouse-db');
  edited.value = '3';
  server.limits = [
    { name: 'warehouse-db', max_running: 2, running: 2, queued: 0, updated_at: 2 },
    { name: 'executor:http://10.0.0.5:9999', max_running: 8, running: 5, queued: 0, updated_at: 2 },
    { name: 'group:billing', max_running: 1, running: 0, queued: 0, updated_at: 2 },
  ];
  one(root, '#refresh-queue').click();
  await until(() => root.querySelectorAll('#limits tbody tr').length === 3, 'the new limit listed');
  assert.equal(inputOf('warehouse-db'), edited, 'the row is the same');
  assert.equal(edited.value, '3', 'what the user typed stays');
  assert.equal(inputOf('executor:http://10.0.0.5:9999').value, '8', 'an untouched maximum follows the admin');
  assert.deepEqual(texts(root, '#limits tbody td.load'), ['2 / 2', '5 / 8', '0 / 1']);
  assert.deepEqual(texts(root, '#limits tbody td.queued'), ['0', '0', '0']);
});

test('without limits or waiting runs the page says so', async () => {
  server.limits = [];
  server.queue = [];
  const root = await page(ADMIN);
  assert.deepEqual(texts(root, '#limits tbody td'), ['No limits: every run is sent as soon as it fires.']);
  assert.deepEqual(texts(root, '#queue tbody td'), ['No run is waiting.']);
});

test("a user sees the limits without changing them, and acts only on runs of groups they operate", async () => {
  const root = await page(OPERATOR);
  assert.equal(root.querySelector('#limit-form'), null);
  assert.equal(root.querySelectorAll('#limits input, #limits button').length, 0);
  assert.equal(root.querySelectorAll('#limits thead th').length, 4);
  assert.equal(root.querySelectorAll('#queue tr[data-run="7"] button').length, 2, 'an operator of group 1');
  assert.equal(root.querySelectorAll('#queue tr[data-run="5"] button').length, 0, 'a viewer of group 2');
  assert.ok(!requests.some((r) => r.path === '/v1/executors'), 'no suggestions asked for a form that is not shown');
});

test('in Chinese', async () => {
  setLang('zh');
  const root = await page(ADMIN);
  assert.equal(one(root, 'h2').textContent, '排队');
  assert.deepEqual(texts(root, '#queue tr[data-run="7"] button'), ['立即执行', '取消']);
  assert.equal(texts(root, '#queue tbody td.waited')[0], '3分 20秒');
});
