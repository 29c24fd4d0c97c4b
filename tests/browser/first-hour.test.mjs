// The web console as a new user meets it in the first hour, in headless Chromium (Debian's
// `chromium`, driven by playwright-core): the row menus at the bottom of a short table, the
// list's filters across a zone or language switch, the dashboard's counts, the run page's log,
// the "Run once" dialog's executors, a workflow node that never ran, a job without a schedule
// and what the audit log says of an edit. Starts its own `chime admin` (temp SQLite) and demo
// executor, as console.test.mjs does.
//
// Needs: the `chime` and `chime-demo-executor` binaries and Chromium (see lib/harness.mjs).
// Every wait is on a condition, with generous limits for a slow, shared machine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cleanUp, freePort, launchBrowser, logInAs, pageCall, shots, startAdmin, startBinary, tempDir, waitFor } from './lib/harness.mjs';

const PASSWORD = 'first-hour-pw';
const LONG = { timeout: 30000 };
// An address nothing listens on: a manual executor that does not answer.
const DEAD = 'http://127.0.0.1:9';

/** @type {import('playwright-core').BrowserContext} */
let browser;
/** @type {import('playwright-core').Page} */
let page;
let base;
let live; // the demo executor's address
let manyJobs; // a group of 53 jobs
const errors = [];

// A request with the session's CSRF token, from the page.
const call = (method, path, body) => pageCall(page, method, path, body);
const created = async (path, body) => {
  const r = await call('POST', path, body);
  assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
};
const shot = (name) => page.screenshot({ path: join(shots, `first-hour-${name}.png`), fullPage: true });
// Opens a page of the console; the page shown already, or one under a dialog a failed test
// left open, is drawn again, fresh.
const open = async (hash) => {
  const stale = new URL(page.url()).hash === `#${hash}` || await page.locator('dialog[open]').count() > 0;
  if (stale) await page.goto(`${base}/console/#${hash}`).then(() => page.reload());
  else await page.goto(`${base}/console/#${hash}`);
};
const openMenu = async (id) => {
  await page.click(`#jobs tr[data-job="${id}"] details.menu summary`);
  await page.waitForSelector(`#jobs tr[data-job="${id}"] details.menu[open] .menu-items`);
};

before(async () => {
  const exPort = await freePort();
  live = `http://127.0.0.1:${exPort}`;
  base = await startAdmin(['--default-tz', 'UTC', '--registry-refresh', '500ms'], { CHIME_ADMIN_PASSWORD: PASSWORD, CHIME_ACCESS_TOKEN: 'tok' });
  startBinary('chime-demo-executor', ['--admin', base, '--appname', 'first-hour', '--token', 'tok', '--listen', `127.0.0.1:${exPort}`, '--logdir', join(tempDir('chime-first-hour-'), 'logs')], { RUST_LOG: 'warn' });
  browser = await launchBrowser();
  page = await browser.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => d.accept());
  await logInAs(page, base, 'admin', PASSWORD);
  await created('/v1/groups', { app_name: 'first-hour' });
  // A manual group: the demo executor, and an address that does not answer.
  await created('/v1/groups', { app_name: 'manual-mix', address_type: 'manual', addresses: [live, DEAD] });
  // For the list's pages.
  manyJobs = await created('/v1/groups', { app_name: 'many-jobs' });
  await waitFor(async () => (await call('GET', '/v1/executors?group=first-hour')).body[0].executors.some((e) => e.address === live), 'the demo executor to register', 60000);
});

after(async () => {
  if (browser) {
    if (process.exitCode) for (const p of browser.pages()) await p.screenshot({ path: join(shots, 'first-hour-failure.png'), fullPage: true }).catch(() => {});
    await browser.close();
  }
  await cleanUp();
});

test('a row menu at the bottom of a short table can be reached', async () => {
  const job = await created('/v1/jobs', { group: 'first-hour', description: 'menu job', handler: 'demoJobHandler', schedule_type: 'CRON', schedule_expr: '0 0 3 * * ?' });
  await open(`jobs`);
  await page.waitForSelector(`#jobs tr[data-job="${job.id}"]`);
  await openMenu(job.id);
  await shot('menu');
  // What a person sees: the point at the middle of each item is that item, not what clips it.
  for (const action of ['edit', 'copy', 'remove']) {
    const hit = await page.$eval(`#jobs tr[data-job="${job.id}"] details.menu button[data-action="${action}"]`, (b) => {
      const r = b.getBoundingClientRect();
      const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return at === b || b.contains(at);
    });
    assert.ok(hit, `"${action}" is on top where it is drawn`);
  }
  await page.keyboard.press('Escape');
  assert.equal((await call('DELETE', `/v1/jobs/${job.id}`)).status, 204);
});

test("switching zone or language keeps the jobs list's filters, sort and page", async () => {
  const group = manyJobs;
  const ids = [];
  try {
    for (let i = 0; i < 53; i++) ids.push((await created('/v1/jobs', { group: 'many-jobs', description: `many ${String(i).padStart(2, '0')}`, handler: 'pagedHandler', schedule_type: 'NONE' })).id);
    await open(`jobs`);
    await page.waitForSelector('#jobs tbody tr');
    await page.selectOption('.filters select[name=group]', String(group.id));
    await page.fill('.filters input[name=handler]', 'paged');
    await page.click('#jobs th[data-sort=description] button');
    await page.click('#jobs th[data-sort=description] button'); // descending
    await page.waitForFunction(() => document.querySelector('#jobs th[data-sort=description]').getAttribute('aria-sort') === 'descending'
      && document.querySelectorAll('#jobs tbody tr').length === 50 && document.querySelector('#jobs tbody td.desc').textContent === 'many 52');
    await page.click('#jobs-next');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 3 && document.getElementById('job-page').textContent === 'Page 2');
    const kept = async (why) => {
      await page.waitForFunction(() => document.querySelectorAll("#jobs tbody tr").length === 3, null, { timeout: 5000 }).catch(() => {});
      assert.equal(await page.inputValue('.filters select[name=group]'), String(group.id), `group filter kept ${why}`);
      assert.equal(await page.inputValue('.filters input[name=handler]'), 'paged', `handler filter kept ${why}`);
      assert.equal(await page.getAttribute('#jobs th[data-sort=description]', 'aria-sort'), 'descending', `sort kept ${why}`);
      assert.deepEqual(await page.locator('#jobs tbody td.desc').allTextContents(), ['many 02', 'many 01', 'many 00'], `page kept ${why}`);
      assert.equal(await page.isDisabled('#jobs-prev'), false, `page kept ${why}`);
    };
    await page.selectOption('#zone', 'utc');
    await page.waitForSelector('#jobs tbody tr');
    await kept('after the zone switch');
    await page.selectOption('#lang', 'zh');
    await page.waitForSelector('h2:has-text("任务管理")');
    await kept('after the language switch');
    await shot('filters-kept-zh');
    await page.selectOption('#lang', 'en');
    await page.waitForSelector('h2:has-text("Jobs")');
    await kept('after switching back');
    await page.selectOption('#zone', 'job');
  } finally {
    for (const id of ids) assert.equal((await call('DELETE', `/v1/jobs/${id}`)).status, 204);
  }
});

test('the dashboard counts executors that answer, and killed runs apart from failures', async () => {
  const job = await created('/v1/jobs', { group: 'first-hour', description: 'killed', handler: 'sleepJobHandler', param: '60', schedule_type: 'NONE' });
  const fired = await call('POST', `/v1/jobs/${job.id}/trigger`, {});
  assert.equal(fired.status, 202);
  await waitFor(async () => (await call('GET', `/v1/runs/${fired.body.run_id}`)).body.status === 'running', 'the run to start', 30000);
  assert.equal((await call('POST', `/v1/runs/${fired.body.run_id}/kill`)).status, 200);
  await waitFor(async () => (await call('GET', `/v1/runs/${fired.body.run_id}`)).body.status === 'killed', 'the run to be killed', 30000);
  await open(`dashboard`);
  await page.waitForSelector('[data-stat=live_executors]');
  // The demo executor, registered in its group and listed in the manual one; 127.0.0.1:9 is silent.
  assert.equal(await page.textContent('[data-stat=live_executors]'), '2', 'a manual address that does not answer is not live');
  assert.equal(await page.textContent('[data-stat=failed]'), '0', 'a killed run is no failure');
  assert.equal(await page.textContent('[data-stat=killed]'), '1', 'killed runs have their own count');
  const stats = (await call('GET', '/v1/stats')).body;
  assert.equal(stats.executors, 2);
  assert.equal(stats.days.reduce((a, d) => a + d.killed, 0), 1);
  assert.equal(stats.days.reduce((a, d) => a + d.failed, 0), 0);
  await shot('dashboard');
});

test("the run page shows the log near the top", async () => {
  const job = await created('/v1/jobs', { group: 'first-hour', description: 'logs', handler: 'demoJobHandler', param: 'hello log', schedule_type: 'NONE' });
  const fired = await call('POST', `/v1/jobs/${job.id}/trigger`, {});
  await open(`runs/${fired.body.run_id}`);
  await page.waitForFunction(() => document.getElementById('run-log')?.textContent.includes('hello log'), null, LONG);
  await shot('run');
  const [logTop, detailTop] = await page.evaluate(() => [document.getElementById('run-log').getBoundingClientRect().top,
    document.getElementById('trigger-msg').getBoundingClientRect().top]);
  assert.ok(logTop < 300, `the log starts near the top: at ${logTop} px`);
  assert.ok(logTop < detailTop, 'the log comes before the trigger details');
});

test('the Run-once dialog marks addresses that do not answer', async () => {
  const job = await created('/v1/jobs', { group: 'manual-mix', description: 'two addresses', handler: 'demoJobHandler', schedule_type: 'NONE' });
  await open(`jobs`);
  await openMenu(job.id);
  await page.click(`#jobs tr[data-job="${job.id}"] details.menu button[data-action=run_once]`);
  await page.waitForSelector(`#run-once select[name=address] option[value="${DEAD}"]`, { state: 'attached' });
  await shot('run-once');
  const dead = await page.textContent(`#run-once select[name=address] option[value="${DEAD}"]`);
  const ok = await page.textContent(`#run-once select[name=address] option[value="${live}"]`);
  assert.match(dead, /no answer/, `the dead address is marked: ${dead}`);
  assert.doesNotMatch(ok, /no answer/, `the live address is not: ${ok}`);
  assert.equal(await page.getAttribute(`#run-once select[name=address] option[value="${DEAD}"]`, 'data-answers'), 'false');
  await page.click('#run-once button:has-text("Cancel")');
  assert.equal((await call('DELETE', `/v1/jobs/${job.id}`)).status, 204);
});

test('a workflow node that was not run shows no times', async () => {
  const fails = await created('/v1/jobs', { group: 'first-hour', description: 'wf fails', handler: 'failJobHandler', param: 'no', schedule_type: 'NONE' });
  const next = await created('/v1/jobs', { group: 'first-hour', description: 'wf next', handler: 'demoJobHandler', schedule_type: 'NONE' });
  const flow = await created('/v1/workflows', { name: 'not run', definition: { nodes: [{ key: 'f', job_id: fails.id }, { key: 'after', job_id: next.id }], edges: [{ from: 'f', to: 'after' }] } });
  const fired = await call('POST', `/v1/workflows/${flow.id}/trigger`, {});
  assert.equal(fired.status, 202);
  await open(`workflows/instance/${fired.body.instance_id}`);
  await page.waitForFunction(() => document.getElementById('wfi-state')?.dataset.state === 'failed'
    && document.querySelector('#wfi-nodes tr[data-node=after] td.state')?.dataset.state === 'not_run', null, LONG);
  const cells = await page.$$eval('#wfi-nodes tr[data-node=after] td', (tds) => tds.map((x) => x.textContent));
  assert.deepEqual([cells[3], cells[4]], ['', ''], `no start or end in the table: ${JSON.stringify(cells)}`);
  await page.click('#wfi-graph g.wf-node[data-key=after]');
  await page.waitForSelector('#wf-node-detail[data-node=after]');
  await shot('not-run');
  const times = await page.$$eval('#wf-node-detail tr', (rs) => rs.filter((r) => /Started|Finished/.test(r.querySelector('th').textContent)).map((r) => r.querySelector('td').textContent));
  assert.deepEqual(times, ['', ''], 'no times in the details');
});

test('a job without a schedule keeps no cron and offers no Start', async () => {
  await open(`jobs/new`);
  await page.waitForSelector('#job-form');
  await page.selectOption('#job-form select[name=group_id]', { label: 'first-hour' });
  await page.fill('#job-form input[name=description]', 'on demand');
  await page.fill('#job-form input[name=handler]', 'demoJobHandler');
  await page.fill('#job-form input[name=schedule_expr]', '0 0 4 * * ?');
  await page.selectOption('#job-form select[name=schedule_type]', 'NONE');
  const sent = page.waitForRequest((r) => r.url().endsWith('/v1/jobs') && r.method() === 'POST');
  await page.click('#job-form button[type=submit]');
  const body = JSON.parse((await sent).postData());
  assert.ok(!body.schedule_expr, `no cron sent for NONE: ${JSON.stringify(body.schedule_expr)}`);
  const row = '#jobs tbody tr:has(td.desc:text-is("on demand"))';
  await page.waitForSelector(row);
  const id = await page.getAttribute(row, 'data-job');
  assert.equal((await call('GET', `/v1/jobs/${id}`)).body.schedule_expr, '', 'no cron stored');
  await openMenu(id);
  assert.equal(await page.locator(`${row} details.menu button[data-action=start]`).count(), 0, 'no Start for a job without a schedule');
  assert.equal(await page.locator(`${row} details.menu button[data-action=run_once]`).count(), 1, 'it still runs once');
  await page.keyboard.press('Escape');
  assert.equal((await call('DELETE', `/v1/jobs/${id}`)).status, 204);
});

test('the audit log says which fields an edit changed, before and after', async () => {
  const job = await created('/v1/jobs', { group: 'first-hour', description: 'audited', handler: 'demoJobHandler', param: 'old', owner: 'Ann', schedule_type: 'NONE' });
  await open(`jobs/edit/${job.id}`);
  await page.waitForSelector('#job-form');
  await page.fill('#job-form input[name=param]', 'new');
  await page.fill('#job-form input[name=owner]', 'Bob');
  await page.click('#job-form button[type=submit]');
  await page.waitForSelector(`#jobs tr[data-job="${job.id}"]`);
  await open(`audit`);
  const edit = `#audit tr:has(td.action[data-action="PUT /v1/jobs/{id}"]):has(td.target:text-is("Job #${job.id}"))`;
  await page.waitForSelector(edit);
  assert.equal(await page.textContent(`${edit} td.action`), 'Changed: Owner, Parameter');
  const detail = await page.textContent(`${edit} td.detail`);
  assert.match(detail, /Owner: Ann → Bob/);
  assert.match(detail, /Parameter: old → new/);
  await shot('audit');
  // The filter finds the words shown.
  await page.fill('.filters input[name=action]', 'parameter');
  await page.waitForFunction((id) => {
    const rows = [...document.querySelectorAll('#audit tbody tr')];
    return rows.some((r) => r.querySelector('td.action').dataset.action === 'PUT /v1/jobs/{id}' && r.querySelector('td.target').textContent === `Job #${id}`)
      && rows.every((r) => /parameter/i.test(r.querySelector('td.action').textContent));
  }, job.id, LONG);
  await page.fill('.filters input[name=action]', '');
  assert.deepEqual(errors, [], 'no script errors');
});
