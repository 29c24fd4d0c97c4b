// The console's Queue page in headless Chromium (Debian's `chromium`, driven by playwright-core)
// against a real `chime admin` (temp SQLite) and the demo executor, whose `sleepJobHandler`
// holds a run as long as its parameter says. A limit of 1 on a concurrency key shared by three
// jobs: one run holds the slot, three wait. The page must list them in the queue's order
// (priority first), and its Cancel and Run now must do what the API then reports; an
// administrator's maximum set in a limit's row lets the last run go, and a limit added and
// deleted from the page is added and deleted in the admin.
//
// Needs: the `chime` and `chime-demo-executor` binaries and Chromium (see lib/harness.mjs).
// Every wait is on a condition, with generous limits for a slow, shared machine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cleanUp, freePort, launchBrowser, logInAs, pageCall, shots, startAdmin, startBinary, tempDir, waitFor } from './lib/harness.mjs';

const PASSWORD = 'queue-test-pw';
const LONG = { timeout: 30000 };
const KEY = 'queue-test-db';
const XSS = '<img src=x onerror="window.__xss=1">';

/** @type {import('playwright-core').BrowserContext} */
let browser;
/** @type {import('playwright-core').Page} */
let page;
let base;
const errors = [];
/** Runs to kill at the end, so the executor stops at once. */
const started = [];

const call = (method, path, body) => pageCall(page, method, path, body);
const created = async (path, body) => {
  const r = await call('POST', path, body);
  assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
};
const shot = (name) => page.screenshot({ path: join(shots, `queue-${name}.png`), fullPage: true });
const run = async (id) => (await call('GET', `/v1/runs/${id}`)).body;
const queueIds = async () => (await call('GET', '/v1/queue')).body.map((q) => q.run_id);
const limit = async (name) => (await call('GET', '/v1/limits')).body.find((l) => l.name === name);
const trigger = async (job) => {
  const r = await call('POST', `/v1/jobs/${job.id}/trigger`, {});
  assert.equal(r.status, 202, JSON.stringify(r.body));
  started.push(r.body.run_id);
  return r.body.run_id;
};
const shownRuns = () => page.locator('#queue tbody tr[data-run]').evaluateAll((rows) => rows.map((r) => Number(r.dataset.run)));

before(async () => {
  const exPort = await freePort();
  base = await startAdmin(['--default-tz', 'UTC', '--registry-refresh', '500ms'], { CHIME_ADMIN_PASSWORD: PASSWORD, CHIME_ACCESS_TOKEN: 'tok' });
  startBinary('chime-demo-executor', ['--admin', base, '--appname', 'queue-demo', '--token', 'tok', '--listen', `127.0.0.1:${exPort}`, '--logdir', join(tempDir('chime-queue-'), 'logs')], { RUST_LOG: 'warn' });
  browser = await launchBrowser();
  page = await browser.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => d.accept());
  await logInAs(page, base, 'admin', PASSWORD);
  await created('/v1/groups', { app_name: 'queue-demo' });
  await waitFor(async () => (await call('GET', '/v1/executors?group=queue-demo')).body[0].executors.length > 0, 'the demo executor to register', 60000);
});

after(async () => {
  if (browser) {
    if (process.exitCode) for (const p of browser.pages()) await p.screenshot({ path: join(shots, 'queue-failure.png'), fullPage: true }).catch(() => {});
    for (const id of started) await call('POST', `/v1/runs/${id}/kill`).catch(() => {});
    await browser.close();
  }
  await cleanUp();
});

test('the queue in order, Cancel and Run now from the page, limits set, added and deleted', async () => {
  // A limit of 1 on the key two jobs share, set through the API.
  const set = await call('PUT', `/v1/limits/${KEY}`, { max_running: 1 });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const common = { group: 'queue-demo', handler: 'sleepJobHandler', param: '120', schedule_type: 'NONE', concurrency_key: KEY };
  // The run holding the slot is of a job of its own: the runs sent later never wait behind it
  // on the executor (its block strategy is per job).
  const first = await created('/v1/jobs', { ...common, description: 'holds the slot' });
  const low = await created('/v1/jobs', { ...common, description: 'low priority', priority: 0 });
  const high = await created('/v1/jobs', { ...common, description: `high priority ${XSS}`, priority: 5 });
  assert.equal(low.concurrency_key, KEY);

  // One run holds the slot; three wait: the high-priority one goes first, then the oldest.
  const holder = await trigger(first);
  await waitFor(async () => (await run(holder)).status === 'running', 'the first run to hold the slot', 30000);
  const lowA = await trigger(low);
  await waitFor(async () => (await queueIds()).includes(lowA), 'a run queued');
  const highRun = await trigger(high);
  const lowB = await trigger(low);
  await waitFor(async () => (await queueIds()).length === 3, 'three runs queued');
  assert.deepEqual(await queueIds(), [highRun, lowA, lowB], 'the API lists priority first, then the oldest');
  assert.equal((await run(lowA)).status, 'pending');

  await page.goto(`${base}/console/#queue`);
  await page.waitForSelector('#queue tbody tr[data-run]');
  assert.deepEqual(await shownRuns(), [highRun, lowA, lowB], 'the page shows the queue in its order');
  assert.deepEqual(await page.locator('#queue tbody td.position').allTextContents(), ['1', '2', '3']);
  assert.equal(await page.getAttribute(`#queue tr[data-run="${lowA}"] td.run a`, 'href'), `#runs/${lowA}`);
  assert.equal(await page.textContent(`#queue tr[data-run="${highRun}"] td.job`), `#${high.id} high priority ${XSS}`);
  assert.equal(await page.textContent(`#queue tr[data-run="${highRun}"] td.waits-on`), KEY);
  assert.equal(await page.textContent(`#queue tr[data-run="${highRun}"] td.priority`), '5');
  assert.match(await page.textContent(`#queue tr[data-run="${highRun}"] td.waited`), /^\d+ s$|min/);
  const limitRow = `#limits tr[data-limit="${KEY}"]`;
  assert.equal(await page.textContent(`${limitRow} td.load`), '1 / 1');
  assert.equal(await page.textContent(`${limitRow} td.queued`), '3');
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'the job description stays text');
  assert.equal(await page.locator('main img, main script').count(), 0);
  await shot('waiting');

  // Cancel the last one (the dialog is accepted): it ends killed, never sent.
  await page.click(`#queue tr[data-run="${lowB}"] button.cancel-run`);
  await page.waitForSelector(`#queue-msg .ok:has-text("Run #${lowB} cancelled.")`);
  await page.waitForFunction((id) => !document.querySelector(`#queue tr[data-run="${id}"]`), lowB);
  const cancelled = await run(lowB);
  assert.equal(cancelled.status, 'killed');
  assert.ok(!cancelled.executor_address, 'never sent to an executor');
  assert.deepEqual(await queueIds(), [highRun, lowA]);

  // Run now on the second: it goes over the limit at the queue's next round, the first stays.
  await page.click(`#queue tr[data-run="${lowA}"] button.run-now`);
  await page.waitForSelector(`#queue-msg .ok:has-text("Run #${lowA} goes")`);
  await waitFor(async () => (await run(lowA)).status === 'running', 'the run sent on to run', 30000);
  assert.deepEqual(await queueIds(), [highRun], 'the other run still waits');
  assert.equal((await run(highRun)).status, 'pending');
  const over = await limit(KEY);
  assert.deepEqual([over.running, over.max_running, over.queued], [2, 1, 1], 'the run sent on holds a slot over the maximum');
  // The page follows by itself (it refreshes every 5 s): the limit shown over its maximum.
  await page.waitForFunction(([sel, id]) => document.querySelector(`${sel} td.load`).textContent === '2 / 1'
    && document.querySelectorAll('#queue tbody tr[data-run]').length === 1 && !!document.querySelector(`#queue tr[data-run="${id}"]`), [limitRow, highRun], LONG);
  assert.equal(await page.getAttribute(`${limitRow} td.load`, 'class'), 'load limit-over');
  await shot('run-now');

  // An administrator raises the maximum in the limit's row: the last run goes.
  await page.fill(`${limitRow} input[name=max_running]`, '3');
  await page.click(`${limitRow} button.set-limit`);
  await waitFor(async () => (await limit(KEY)).max_running === 3, 'the new maximum');
  await waitFor(async () => (await run(highRun)).status === 'running', 'the last run to go once a slot is free', 30000);
  await page.waitForFunction((sel) => document.querySelector(`${sel} td.load`).textContent === '3 / 3'
    && document.querySelector('#queue tbody tr.empty') !== null, limitRow, LONG);

  // A limit added from the page (a group's, its name made from the kind), then deleted.
  await page.selectOption('#limit-form select[name=limit_kind]', 'group');
  await page.fill('#limit-form input[name=name]', 'queue-demo');
  await page.fill('#limit-form input[name=max_running]', '4');
  await page.click('#add-limit');
  await page.waitForSelector('#limits tr[data-limit="group:queue-demo"]');
  assert.equal((await limit('group:queue-demo')).max_running, 4);
  assert.equal(await page.textContent('#limits tr[data-limit="group:queue-demo"] td:nth-child(2)'), 'Executor group');
  // A name the admin refuses is reported next to the field.
  await page.selectOption('#limit-form select[name=limit_kind]', 'key');
  await page.fill('#limit-form input[name=name]', 'no spaces allowed');
  await page.click('#add-limit');
  await page.waitForSelector('#limit-form .field-err[data-field=name]');
  await page.click('#limits tr[data-limit="group:queue-demo"] button.delete-limit');
  await page.waitForFunction(() => !document.querySelector('#limits tr[data-limit="group:queue-demo"]'));
  assert.equal(await limit('group:queue-demo'), undefined);

  // The menu has the page, and it speaks Chinese.
  assert.equal(await page.getAttribute('#nav a[href="#queue"]', 'class'), 'on');
  await page.selectOption('#lang', 'zh');
  await page.waitForSelector('h2:has-text("排队")');
  await page.waitForSelector(`${limitRow} button.set-limit:has-text("保存")`);
  await shot('zh');
  await page.selectOption('#lang', 'en');
  assert.deepEqual(errors, [], 'no script errors');
});
