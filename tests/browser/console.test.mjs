// End-to-end test of the Chime web console in headless Chromium (Debian's `chromium`,
// driven by playwright-core; no browser download). Starts the real `chime admin` on a temp
// SQLite database and the demo executor, then walks the console as a person would.
//
// Needs: the `chime` and `chime-demo-executor` binaries and Chromium (see lib/harness.mjs).
// Screenshots go to target/browser-screenshots/ (or CHIME_SCREENSHOTS).
//
// Every wait is on a condition (a selector, a text, a status), with generous limits for a
// slow, shared machine; nothing asserts on elapsed time.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { cleanUp, freePort, launchBrowser, pageCall, shots, startAdmin, startBinary, tempDir, waitFor } from './lib/harness.mjs';

const PASSWORD = 'browser-test-pw';
// Stored XSS attempts: if any of these ever runs, window.__xss becomes defined.
const XSS = '<img src=x onerror="window.__xss=1">';
const XSS2 = '<script>window.__xss=2</script><svg onload="window.__xss=3">';

// Whatever happens, the admin and executor stop (the executor first) and temporary files go.
after(cleanUp);

const LONG = { timeout: 30000 };

test('console walk-through', { timeout: 300000 }, async () => {
  const exPort = await freePort();
  const base = await startAdmin(['--default-tz', 'UTC', '--registry-refresh', '500ms'], { CHIME_ADMIN_PASSWORD: PASSWORD, CHIME_ACCESS_TOKEN: 'tok' });
  const executor = startBinary('chime-demo-executor', ['--admin', base, '--appname', 'browser-demo', '--token', 'tok', '--listen', `127.0.0.1:${exPort}`, '--logdir', join(tempDir('chime-browser-'), 'logs')], { RUST_LOG: 'warn' });
  // Times on the page are in the browser's zone: launchBrowser makes it UTC whatever the
  // machine's is.
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const dialogs = [];
    // Every dialog is accepted; a prompt with the answer it offers.
    page.on('dialog', (d) => { dialogs.push(d.message()); d.accept(d.defaultValue()); });
    // A job row's action, from the row's menu.
    const rowAction = async (id, action) => {
      await page.click(`#jobs tr[data-job="${id}"] details.menu summary`);
      await page.click(`#jobs tr[data-job="${id}"] details.menu button[data-action="${action}"]`);
    };
    // "Run once" with a parameter (and an executor, when given) from the row's dialog.
    const runOnce = async (id, param, address) => {
      await rowAction(id, 'run_once');
      await page.waitForSelector('#run-once textarea[name=param]');
      await page.fill('#run-once textarea[name=param]', param);
      if (address) await page.selectOption('#run-once select[name=address]', address);
      await page.click('#run-once button[type=submit]');
    };
    const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
    // `drawings`: the SVG drawings the page makes itself (a workflow's graph); any other svg, and
    // any img or script, came from data.
    const noXss = async (where, drawings = 0) => {
      assert.equal(await page.evaluate(() => window.__xss), undefined, `XSS payload ran on ${where}`);
      assert.equal(await page.locator('main img, main script').count(), 0, `markup from data on ${where}`);
      assert.equal(await page.locator('main svg').count(), drawings, `markup from data on ${where}`);
    };
    const csrfFetch = (method, path, body) => pageCall(page, method, path, body);

    // Both languages have every word.
    await page.goto(`${base}/`);
    await page.waitForSelector('#login');
    const [enKeys, zhKeys] = await page.evaluate(async () => {
      const { dict } = await import('/console/i18n.js');
      return [Object.keys(dict.en).sort(), Object.keys(dict.zh).sort()];
    });
    assert.deepEqual(zhKeys, enKeys, 'English and Chinese have the same words');

    // The login page has its own language switch; what was typed stays.
    await page.fill('input[name=username]', 'admin');
    await page.selectOption('#login-lang', 'zh');
    await page.waitForSelector('#login button[type=submit]:has-text("登录")');
    assert.equal(await page.inputValue('input[name=username]'), 'admin');
    assert.equal(await page.getAttribute('html', 'lang'), 'zh-CN');
    await shot('00-login-chinese');
    await page.selectOption('#login-lang', 'en');
    await page.waitForSelector('#login button[type=submit]:has-text("Log in")');

    // Log in: a wrong password is refused with a message, the right one opens the dashboard.
    await page.fill('input[name=username]', 'admin');
    await page.fill('input[name=password]', 'wrong-password');
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#login-error:has-text("wrong")');
    await page.fill('input[name=password]', PASSWORD);
    await shot('01-login');
    await page.click('#login button[type=submit]');
    await page.waitForSelector('[data-stat=jobs]');
    const session = (await browser.cookies()).find((c) => c.name === 'chime_session');
    assert.ok(session && session.httpOnly && session.sameSite === 'Strict', 'session cookie is HttpOnly, SameSite=Strict');
    assert.equal(await page.evaluate(() => document.cookie.includes('chime_session')), false, 'script cannot read the session');

    // Executors: create the demo group and a second one; the demo executor shows up live.
    await page.click('a[href="#executors"]');
    for (const app of ['browser-demo', 'other-team']) {
      await page.click('#add-group');
      await page.fill('#group-form input[name=app_name]', app);
      await page.click('#group-form button[type=submit]');
      await page.waitForSelector(`tr[data-app="${app}"]`);
    }
    await waitFor(async () => {
      await page.evaluate(() => { location.hash = `#executors/${Date.now()}`; });
      const cell = await page.waitForSelector('tr[data-app="browser-demo"] td:nth-child(3)');
      return (await cell.textContent()).includes(`127.0.0.1:${exPort}`);
    }, 'the demo executor to register', 60000);
    assert.equal(executor.exitCode, null, 'demo executor is running');
    await page.click('tr[data-app="other-team"] button:has-text("Edit")');
    await page.fill('#group-form input[name=title]', 'Other team');
    await page.click('#group-form button[type=submit]');
    await page.waitForSelector('tr[data-app="other-team"] td:nth-child(2):has-text("Other team")');
    assert.equal(await page.getAttribute('tr[data-app="browser-demo"] td.address-type', 'data-type'), 'auto', 'the group says it is registered automatically');
    assert.equal(await page.textContent('tr[data-app="browser-demo"] td.address-type'), 'Automatic (executors register)');
    await shot('03-executors');
    // A manual group: its addresses have no heartbeat, so the page says whether each answers.
    await page.click('#add-group');
    await page.fill('#group-form input[name=app_name]', 'manual-pair');
    await page.fill('#group-form input[name=addresses]', `http://127.0.0.1:${exPort},http://127.0.0.1:9`);
    await page.click('#group-form button[type=submit]');
    await page.waitForSelector('tr[data-app="manual-pair"] .answers.no');
    assert.equal(await page.textContent('tr[data-app="manual-pair"] .answers.yes'), ' (answers)', 'the demo executor answers');
    assert.equal(await page.locator('tr[data-app="manual-pair"] .answers').count(), 2);
    assert.equal(await page.getAttribute('tr[data-app="manual-pair"] td.address-type', 'data-type'), 'manual');
    await shot('03-executors-manual');
    assert.equal((await csrfFetch('DELETE', '/v1/groups/manual-pair')).status, 204);

    // Jobs: a cron job whose schedule validates as it is typed and previews the next 5 fire
    // times in the job's zone, flagging the DST change.
    await page.goto(`${base}/console/#jobs`);
    await page.click('#new-job');
    await page.selectOption('#job-form select[name=group_id]', { label: 'browser-demo' });
    await page.fill('#job-form input[name=description]', XSS);
    await page.fill('#job-form input[name=handler]', 'sleepJobHandler');
    await page.fill('#job-form input[name=param]', '1'); // also runs as job 2's child: keep it short
    await page.fill('#job-form input[name=schedule_expr]', 'not a cron');
    await page.waitForSelector('#preview-box .err');
    assert.equal(await page.$eval('#job-form input[name=schedule_expr]', (el) => el.validity.valid), false, 'invalid cron marks the field');
    // Errors name the field by its label, not by the API's name for it.
    assert.match(await page.textContent('#preview-box .err'), /^Schedule expression: /);
    await page.fill('#job-form input[name=time_zone]', 'Europe/Berlin');
    // Quarterly fires always cross a DST change within five; the preview flags it.
    await page.fill('#job-form input[name=schedule_expr]', '0 0 12 1 1/3 ?');
    await page.waitForFunction(() => document.querySelectorAll('#preview li').length === 5 && document.querySelector('#preview li .dst'), null, LONG);
    assert.equal(await page.$eval('#job-form input[name=schedule_expr]', (el) => el.validity.valid), true);
    await shot('04-job-form-dst');
    await page.fill('#job-form input[name=schedule_expr]', '0 0 3 * * ?');
    await page.waitForFunction(() => [...document.querySelectorAll('#preview li')].every((li) => li.dataset.local.includes('T03:00:00')), null, LONG);
    const first = await page.textContent('#preview li');
    // The console's one date format, with the zone named.
    assert.match(first, /^\d{4}-\d\d-\d\d 03:00:00 Europe\/Berlin$/, 'preview is in the job zone');
    // A wrong zone marks the zone field (not the expression); fixing it clears the mark at once.
    await page.fill('#job-form input[name=time_zone]', 'Mars/Olympus');
    await page.waitForSelector('#preview-box .err');
    assert.equal(await page.$eval('#job-form input[name=time_zone]', (el) => el.validity.valid), false, 'the zone is marked');
    assert.equal(await page.$eval('#job-form input[name=schedule_expr]', (el) => el.validity.valid), true, 'the expression is not');
    await page.fill('#job-form input[name=time_zone]', 'Europe/Berlin');
    assert.equal(await page.$eval('#job-form input[name=time_zone]', (el) => el.validity.valid), true, 'a fixed zone blocks nothing');
    await page.waitForSelector('#preview li');
    // A parameter with date placeholders is previewed as each fire would send it; a malformed
    // one marks the parameter, and fixing it clears the mark.
    await page.fill('#job-form input[name=param]', 'day=${fire_time:yyyy-MM-dd} h=${fire_time:HH}');
    await page.waitForFunction(() => document.querySelectorAll('#preview li .param').length === 5, null, LONG);
    const dated = await page.locator('#preview li').evaluateAll((l) => l.map((x) => ({ local: x.dataset.local, param: x.querySelector('.param').textContent })));
    for (const li of dated) assert.equal(li.param, ` → day=${li.local.slice(0, 10)} h=03`, 'resolved in the job zone');
    await page.fill('#job-form input[name=param]', 'x ${fire_tme}');
    await page.waitForSelector('#preview-box .err');
    assert.equal(await page.$eval('#job-form input[name=param]', (el) => el.validity.valid), false, 'the parameter is marked');
    assert.match(await page.textContent('#preview-box .err'), /character 3/);
    await page.fill('#job-form input[name=param]', '1');
    await page.waitForSelector('#preview li');
    assert.equal(await page.$eval('#job-form input[name=param]', (el) => el.validity.valid), true);
    // A further schedule, a line of its own in its own zone: the preview merges its times with
    // the job's; a wrong one marks the field, and fixing it clears the mark.
    await page.fill('#job-form textarea[name=more_schedules]', 'CRON 0 0 15 * * ? @UTC');
    await page.waitForFunction(() => {
      const local = [...document.querySelectorAll('#preview li')].map((li) => li.dataset.local);
      return local.length === 5 && local.some((l) => l.includes('T03:00:00')) && local.some((l) => !l.includes('T03:00:00'));
    }, null, LONG);
    const merged = await page.locator('#preview li').evaluateAll((l) => l.map((x) => Date.parse(x.dataset.local)));
    assert.deepEqual(merged, [...merged].sort((a, b) => a - b), 'merged in order');
    // 03:00 in Berlin is 01:00 or 02:00 UTC; the further one is 15:00 UTC.
    for (const at of merged) assert.ok([1, 2, 15].includes(new Date(at).getUTCHours()), `a time of one of the schedules: ${new Date(at).toISOString()}`);
    await page.fill('#job-form textarea[name=more_schedules]', 'CRON 0 0 25 * * ?');
    await page.waitForSelector('#preview-box .err');
    assert.equal(await page.$eval('#job-form textarea[name=more_schedules]', (el) => el.validity.valid), false, 'the further schedules are marked');
    assert.match(await page.textContent('#preview-box .err'), /more_schedules\[0\]\.schedule_expr|More schedules/);
    await page.fill('#job-form textarea[name=more_schedules]', 'CRON 0 0 15 * * ? @UTC');
    await page.waitForSelector('#preview li');
    assert.equal(await page.$eval('#job-form textarea[name=more_schedules]', (el) => el.validity.valid), true);
    // The form is in sections; every select of a job enum offers exactly the admin's values,
    // each with its translated name and a line explaining the chosen one.
    assert.deepEqual(await page.locator('#job-form fieldset.sec').evaluateAll((f) => f.map((x) => x.dataset.section)), ['basics', 'schedule', 'executor', 'flow', 'alarms', 'advanced']);
    const opts = (await csrfFetch('GET', '/v1/options')).body;
    for (const [name, key] of [['schedule_type', 'schedule_types'], ['misfire_strategy', 'misfire_strategies'], ['route_strategy', 'route_strategies'], ['block_strategy', 'block_strategies'], ['glue_type', 'glue_types']]) {
      const offeredValues = await page.locator(`#job-form select[name=${name}] option`).evaluateAll((o) => o.map((x) => x.value));
      assert.deepEqual(offeredValues, opts[key].map((c) => c.value), `${name} offers the admin's values`);
    }
    assert.ok(opts.misfire_strategies.some((c) => c.value === 'CATCH_UP'));
    await page.selectOption('#job-form select[name=misfire_strategy]', 'CATCH_UP');
    assert.equal(await page.textContent('#job-form select[name=misfire_strategy] option:checked'), 'Catch up');
    assert.match(await page.textContent('#help-misfire_strategy'), /Replays each missed fire/);
    assert.equal(await page.textContent('#job-form select[name=block_strategy] option:checked'), 'Serial execution');
    // Owner and alarm e-mails; the server's complaint about a field is shown next to it.
    await page.fill('#job-form input[name=owner]', 'o'.repeat(70));
    assert.equal(await page.isVisible('#smtp-warning'), false, 'no warning without alarm e-mails');
    await page.fill('#job-form input[name=alarm_contacts]', 'ops@example.com, dev@example.com');
    // This admin has no SMTP server: the form says the e-mails will not go out.
    assert.equal(await page.isVisible('#smtp-warning'), true, 'alarm e-mails without SMTP are warned about');
    await page.click('#job-form button[type=submit]');
    await page.waitForSelector('#job-form label:has(input[name=owner]) .field-err');
    assert.equal(await page.getAttribute('#job-form input[name=owner]', 'aria-invalid'), 'true');
    await shot('04-job-form-field-error');
    await page.fill('#job-form input[name=owner]', 'Ops team');
    assert.equal(await page.locator('#job-form .field-err').count(), 0, 'editing the field clears its error');
    await shot('04-job-form');
    await page.click('#job-form button[type=submit]');
    await page.waitForSelector('#jobs tbody tr');
    // The stored XSS attempt is shown as text and never runs.
    assert.equal(await page.textContent('#jobs td.desc'), XSS);
    await noXss('jobs');

    // A second job whose parameter (and so its log and result) is an XSS attempt, and a
    // GLUE shell job for the script editor.
    await page.click('#new-job');
    await page.selectOption('#job-form select[name=group_id]', { label: 'browser-demo' });
    await page.fill('#job-form input[name=description]', 'hello job');
    // Handler names already used in the group are suggested, and those its Chime executor
    // reported when it registered (no job uses shardingJobHandler).
    await page.waitForFunction(() => [...document.querySelectorAll('#handler-names option')].some((o) => o.value === 'sleepJobHandler'));
    await page.waitForFunction(() => [...document.querySelectorAll('#handler-names option')].some((o) => o.value === 'shardingJobHandler'));
    await page.fill('#job-form input[name=handler]', 'demoJobHandler');
    await page.fill('#job-form input[name=param]', XSS2);
    await page.selectOption('#job-form select[name=schedule_type]', 'NONE');
    await page.selectOption('#job-form select[name=child_job_ids]', { label: `1 ${XSS}` });
    await page.click('#job-form button[type=submit]');
    await page.waitForSelector('#jobs tbody tr[data-job="2"]');
    await page.click('#new-job');
    await page.selectOption('#job-form select[name=group_id]', { label: 'browser-demo' });
    await page.fill('#job-form input[name=description]', 'glue job');
    await page.selectOption('#job-form select[name=schedule_type]', 'NONE');
    await page.selectOption('#job-form select[name=glue_type]', 'GLUE_SHELL');
    await page.click('#job-form button[type=submit]');
    await page.waitForSelector('#jobs tbody tr[data-job="3"]');
    assert.deepEqual(await csrfFetch('GET', '/v1/jobs/2').then((r) => r.body.child_job_ids), [1], 'child job picked by name');
    const job1 = (await csrfFetch('GET', '/v1/jobs/1')).body;
    assert.deepEqual([job1.owner, job1.alarm_contacts, job1.misfire_strategy], ['Ops team', 'ops@example.com, dev@example.com', 'CATCH_UP']);
    assert.deepEqual(job1.more_schedules, [{ schedule_type: 'CRON', schedule_expr: '0 0 15 * * ?', time_zone: 'UTC' }], 'the further schedule saved');
    // Editing a CATCH_UP job keeps it CATCH_UP (the form offers what the admin accepts).
    await rowAction(1, 'edit');
    await page.waitForSelector('#job-form');
    assert.equal(await page.inputValue('#job-form select[name=misfire_strategy]'), 'CATCH_UP');
    assert.equal(await page.inputValue('#job-form textarea[name=more_schedules]'), 'CRON 0 0 15 * * ? @UTC', 'shown as written');
    // Emptied, the field removes it (the walk below counts on the job's own 03:00).
    await page.fill('#job-form textarea[name=more_schedules]', '');
    await page.fill('#job-form input[name=param]', '2');
    await shot('04-job-form-edit-catch-up');
    await page.click('#job-form button[type=submit]');
    await page.waitForSelector('#jobs tbody tr[data-job="1"]');
    const edited = (await csrfFetch('GET', '/v1/jobs/1')).body;
    assert.deepEqual([edited.param, edited.misfire_strategy], ['2', 'CATCH_UP'], 'the edit kept CATCH_UP');
    assert.deepEqual(edited.more_schedules, [], 'the emptied field removed the further schedule');
    await csrfFetch('PATCH', '/v1/jobs/1', { param: '1' });

    // Filters: by handler and by description.
    await page.fill('.filters input[name=handler]', 'demoJob');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 1);
    await page.fill('.filters input[name=handler]', '');
    await page.fill('.filters input[name=description]', 'glue');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 1 && document.querySelector('#jobs tbody tr[data-job="3"]'));
    await page.fill('.filters input[name=description]', '');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 3);
    // The owner column and its filter.
    assert.equal(await page.textContent('#jobs tr[data-job="1"] td.owner'), 'Ops team');
    await page.fill('.filters input[name=owner]', 'ops');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 1 && document.querySelector('#jobs tbody tr[data-job="1"]'));
    await page.fill('.filters input[name=owner]', '');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 3);
    // Sorting is the server's: by description, then reversed.
    const order = () => page.locator('#jobs tbody tr').evaluateAll((r) => r.map((x) => x.dataset.job));
    await page.click('#jobs th[data-sort=description] button');
    await page.waitForFunction(() => document.querySelector('#jobs th[data-sort=description]').getAttribute('aria-sort') === 'ascending');
    await waitFor(async () => JSON.stringify(await order()) === JSON.stringify(['1', '3', '2']), 'jobs sorted by description');
    await page.click('#jobs th[data-sort=description] button');
    await waitFor(async () => JSON.stringify(await order()) === JSON.stringify(['2', '3', '1']), 'jobs sorted by description, descending');
    await page.click('#jobs th[data-sort=id] button');
    await waitFor(async () => JSON.stringify(await order()) === JSON.stringify(['1', '2', '3']), 'jobs sorted by id');
    await shot('05-jobs');
    // Server-side pages of 50: 52 more jobs (in the other group) make two pages.
    const bulk = [];
    for (let i = 0; i < 52; i++) bulk.push((await csrfFetch('POST', '/v1/jobs', { group: 'other-team', description: `bulk ${String(i).padStart(2, '0')}`, handler: 'demoJobHandler', schedule_type: 'NONE' })).body.id);
    await page.click('#jobs th[data-sort=id] button'); // descending: the bulk jobs first
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 50);
    assert.equal(await page.isDisabled('#jobs-next'), false);
    assert.equal(await page.isDisabled('#jobs-prev'), true);
    await page.click('#jobs-next');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 5 && document.getElementById('job-page').textContent === 'Page 2');
    assert.deepEqual(await order(), ['5', '4', '3', '2', '1']);
    await shot('05-jobs-page-2');
    for (const id of bulk) assert.equal((await csrfFetch('DELETE', `/v1/jobs/${id}`)).status, 204);
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 3);

    // Start and stop; copy.
    await rowAction(1, 'start');
    await page.waitForSelector('#jobs tr[data-job="1"] button[data-action=stop]', { state: 'attached' });
    // A started job shows when it fires next, in its own zone with the zone named (03:00 in
    // Berlin); the top bar switches the whole console to UTC or the browser's zone (UTC here).
    assert.match(await page.textContent('#jobs tr[data-job="1"] td.next-fire'), /^\d{4}-\d\d-\d\d 03:00:00 Europe\/Berlin$/);
    await page.selectOption('#zone', 'utc');
    await page.waitForFunction(() => / 0[12]:00:00 UTC$/.test(document.querySelector('#jobs tr[data-job="1"] td.next-fire')?.textContent || ''));
    await shot('05-jobs-started-utc');
    await page.reload();
    await page.waitForSelector('#jobs tr[data-job="1"] td.next-fire');
    assert.equal(await page.inputValue('#zone'), 'utc', 'the zone choice is kept in the browser');
    await page.selectOption('#zone', 'browser');
    await page.waitForFunction(() => / 0[12]:00:00 UTC$/.test(document.querySelector('#jobs tr[data-job="1"] td.next-fire')?.textContent || ''));
    await page.selectOption('#zone', 'job');
    await page.waitForFunction(() => /03:00:00 Europe\/Berlin$/.test(document.querySelector('#jobs tr[data-job="1"] td.next-fire')?.textContent || ''));
    await shot('05-jobs-started');
    // Pause for the hour the prompt offers, then resume: the row says until when.
    dialogs.length = 0;
    await rowAction(1, 'pause');
    await page.waitForSelector('#jobs tr[data-job="1"] td.status.paused');
    assert.match(dialogs[0], /^Pause for how many hours\?/);
    assert.match(await page.textContent('#jobs tr[data-job="1"] td.status'), /^⏸ Paused until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d Europe\/Berlin$/);
    const pausedUntil = (await csrfFetch('GET', '/v1/jobs/1')).body.paused_until;
    assert.ok(Math.abs(pausedUntil - Date.now() - 3600_000) < 60_000, `paused for the hour offered: ${pausedUntil}`);
    await shot('05-jobs-paused');
    await rowAction(1, 'resume');
    await page.waitForSelector('#jobs tr[data-job="1"] td.status.ok');
    assert.ok((await csrfFetch('GET', '/v1/jobs/1')).body.paused_until <= Date.now(), 'the pause ended');
    await rowAction(1, 'stop');
    await page.waitForSelector('#jobs tr[data-job="1"] button[data-action=start]', { state: 'attached' });
    assert.equal(await page.textContent('#jobs tr[data-job="1"] td.next-fire'), '');
    await rowAction(2, 'copy');
    await page.waitForSelector('#job-form');
    assert.equal(await page.inputValue('#job-form input[name=description]'), 'hello job (copy)');
    await page.click('#job-form button[type=submit]');
    const copyRow = '#jobs tbody tr:has(td.desc:text-is("hello job (copy)"))';
    await page.waitForSelector(copyRow);
    const copyId = await page.getAttribute(copyRow, 'data-job');
    await rowAction(copyId, 'remove');
    await page.waitForFunction((id) => !document.querySelector(`#jobs tbody tr[data-job="${id}"]`), copyId);

    // Script editor: save two versions, see highlighting, diff and restore.
    await rowAction(3, 'script');
    await page.waitForSelector('textarea[name=glue_source]');
    await page.fill('textarea[name=glue_source]', '#!/bin/sh\n# greet\necho "hello"\n');
    await page.click('#save-script');
    // The page reloads after a save: wait for the new version (the template is there already),
    // so the next edit goes into the reloaded editor.
    await page.waitForFunction(() => document.querySelectorAll('#versions tr[data-version]').length === 2);
    await page.fill('textarea[name=glue_source]', '#!/bin/sh\n# greet\nif true; then echo "hello world"; fi\n');
    await page.waitForSelector('#highlighted span.kw:has-text("then")');
    assert.ok(await page.locator('#highlighted span.str').count() >= 1, 'strings highlighted');
    assert.ok(await page.locator('#highlighted span.cm').count() >= 1, 'comments highlighted');
    await page.click('#save-script');
    // The template the job was created with, then the two saved versions (newest first).
    await page.waitForFunction(() => document.querySelectorAll('#versions tr[data-version]').length === 3);
    assert.deepEqual(await page.locator('#versions tr[data-version] td:nth-child(2)').allTextContents(), ['admin', 'admin', 'admin'], 'versions record who saved them');
    await shot('06-script-editor');
    await page.click('#versions tr[data-version]:nth-child(2) button.diff');
    await page.waitForSelector('#diff .add');
    assert.deepEqual(await page.locator('#diff .del').allTextContents(), ['- echo "hello"']);
    assert.deepEqual(await page.locator('#diff .add').allTextContents(), ['+ if true; then echo "hello world"; fi']);
    await shot('07-script-diff');
    await page.click('#versions tr[data-version]:nth-child(2) button.restore');
    assert.equal(await page.inputValue('textarea[name=glue_source]'), '#!/bin/sh\n# greet\necho "hello"\n');

    // Run once with a parameter: the log rolls while it runs, then kill it.
    await page.goto(`${base}/console/#jobs`);
    // The dialog offers the group's live executors; the run goes to the one chosen.
    const triggerSent = page.waitForRequest((r) => r.url().includes('/v1/jobs/1/trigger') && r.method() === 'POST');
    await rowAction(1, 'run_once');
    await page.waitForSelector(`#run-once select[name=address] option[value="http://127.0.0.1:${exPort}"]`, { state: 'attached' });
    await page.fill('#run-once textarea[name=param]', '60');
    await page.selectOption('#run-once select[name=address]', `http://127.0.0.1:${exPort}`);
    await shot('08-run-once-dialog');
    await page.click('#run-once button[type=submit]');
    assert.deepEqual(JSON.parse((await triggerSent).postData()), { param: '60', address: `http://127.0.0.1:${exPort}`, trigger_type: 'MANUAL' });
    await page.waitForSelector('#run-log');
    await page.waitForFunction(() => document.getElementById('run-log').textContent.includes('slept 1 s'), null, LONG);
    // No stale error above a log that streams, and the page names the run's job.
    assert.equal(await page.locator('main .err').count(), 0, 'no error above a streaming log');
    assert.equal(await page.textContent('#run-job'), `#1 ${XSS}`);
    assert.equal(await page.textContent('#log-state'), '(live)');
    const early = await page.textContent('#run-log');
    assert.ok(!early.includes('slept 3 s'));
    await page.waitForFunction(() => document.getElementById('run-log').textContent.includes('slept 3 s'), null, LONG);
    const later = await page.textContent('#run-log');
    assert.ok(later.startsWith(early), 'the log grows by appending');
    assert.equal(await page.getAttribute('#run-status', 'data-status'), 'running', 'still running while the log rolls');
    assert.match(await page.textContent('#run-param'), /^60$/);
    await shot('08-run-log');
    // XXL-JOB's `<br>` separators show as line breaks (elements, not markup from data).
    assert.ok(await page.locator('#trigger-msg br').count() >= 1, 'trigger details are split into lines');
    assert.ok(!(await page.textContent('#trigger-msg')).includes('<br'), 'no literal <br> in the trigger details');
    assert.ok(await page.locator('#run-log br').count() >= 1 && !(await page.textContent('#run-log')).includes('<br'), 'log lines are split too');
    assert.equal(await page.isVisible('#kill'), true, 'a running run can be killed');
    dialogs.length = 0;
    await page.click('#kill');
    assert.deepEqual(dialogs, ['Kill this run on its executor?'], 'kill asks first');
    // A killed run has its own state (stored as a failure, as executors report it), with who killed it.
    await page.waitForFunction(() => document.getElementById('run-status').dataset.status === 'killed', null, LONG);
    assert.equal(await page.textContent('#run-status'), 'Killed');
    assert.equal(await page.getAttribute('#run-status', 'class'), 'st-killed');
    assert.equal(await page.textContent('#run-killed-by'), ' — killed by admin');
    await page.waitForSelector('#handle-msg:not(:empty)');
    await page.waitForSelector('#kill', { state: 'hidden' });
    // A final run whose log has ended is no longer polled.
    await page.waitForFunction(() => document.getElementById('log-state').textContent === '(log complete)', null, LONG);
    // No retry links on a run that is none. A killed run is alarmed like any failure: the
    // job's two e-mail contacts cannot be told without SMTP, and the alarm row says so; the
    // delivery to the contacts is listed under it, failed, with the reason.
    assert.equal(await page.isVisible('#run-links'), false, 'no retry row');
    await page.waitForFunction(() => document.getElementById('run-alarm').dataset.alarm === 'failed', null, LONG);
    assert.match(await page.textContent('#run-alarm'), /^failed: e-mail: not sent to 2 contact\(s\): no SMTP server is configured/);
    await page.waitForSelector('#run-alarms tr[data-channel="e-mail"][data-state=failed]');
    assert.deepEqual((await page.locator('#run-alarms tr[data-channel="e-mail"] td').allTextContents()).slice(0, 3), ['e-mail', 'E-mail', 'failed']);
    assert.match(await page.textContent('#run-alarms tr[data-channel="e-mail"] td.error'), /no SMTP server is configured/);
    await shot('09-run-killed');
    // The runs list shows it as killed, and its status filter finds it.
    const killedRun = Number(/#runs\/(\d+)/.exec(page.url())[1]);
    await page.goto(`${base}/console/#runs`);
    await page.waitForSelector(`#runs tbody tr[data-run="${killedRun}"]`);
    const filtered = page.waitForResponse((r) => r.url().includes('/v1/runs?') && r.url().includes('status=killed'));
    await page.selectOption('.filters select[name=status]', 'killed');
    assert.deepEqual((await (await filtered).json()).map((r) => r.id), [killedRun], 'the filter asks the admin for killed runs');
    await page.waitForSelector(`#runs tbody tr[data-run="${killedRun}"] td.st-killed`);
    assert.equal(await page.locator('#runs tbody tr').count(), 1, 'only the killed run');
    assert.equal(await page.textContent(`#runs tbody tr[data-run="${killedRun}"] td.st-killed`), 'Killed');
    await shot('09-runs-killed-filter');

    // A failing job with one retry and an e-mail contact, on an admin without SMTP: the failed
    // run links to its retry and back, and the retry's alarm says why it was not sent.
    const failing = await csrfFetch('POST', '/v1/jobs', { group: 'browser-demo', description: 'fails', handler: 'failJobHandler', schedule_type: 'NONE', retry_count: 1, alarm_contacts: 'ops@example.com' });
    assert.equal(failing.status, 201);
    const failed = await csrfFetch('POST', `/v1/jobs/${failing.body.id}/trigger`, { param: 'on purpose' });
    assert.equal(failed.status, 202);
    await page.goto(`${base}/console/#runs/${failed.body.run_id}`);
    await page.waitForSelector('#run-retried-by', LONG);
    assert.equal(await page.getAttribute('#run-status', 'data-status'), 'failed');
    assert.equal(await page.isVisible('#run-retry-of'), false, 'the first run retries nothing');
    assert.equal(await page.textContent('#run-alarm'), 'not needed', 'a retried failure needs no alarm');
    const retryText = await page.textContent('#run-retried-by');
    assert.match(retryText, /^Retried by run #\d+$/);
    const retryId = Number(retryText.split('#')[1]);
    await page.click('#run-retried-by');
    await page.waitForFunction((r) => location.hash === `#runs/${r}` && document.getElementById('run-retry-of'), retryId);
    assert.equal(await page.textContent('#run-retry-of'), `Retry of run #${failed.body.run_id}`);
    assert.equal(await page.getAttribute('#run-retry-of', 'href'), `#runs/${failed.body.run_id}`);
    await page.waitForFunction(() => document.getElementById('run-alarm').dataset.alarm === 'failed', null, LONG);
    assert.match(await page.textContent('#run-alarm'), /^failed: e-mail: not sent to 1 contact\(s\): no SMTP server is configured/);
    assert.equal(await page.getAttribute('#run-alarm', 'class'), 'alarm-failed');
    await shot('09-run-retry-alarm-failed');
    // The same in Chinese.
    await page.selectOption('#lang', 'zh');
    await page.waitForFunction(() => (document.getElementById('run-retry-of') || {}).textContent?.startsWith('重试自执行 #'));
    assert.match(await page.textContent('#run-alarm'), /^发送失败: /);
    await shot('09-run-retry-alarm-failed-zh');
    await page.selectOption('#lang', 'en');
    await page.waitForSelector('#run-retry-of:has-text("Retry of run")');

    // A run its executor refused (no such handler) never ran there: the page says why there
    // is no log, and does not poll for one.
    const refused = await csrfFetch('POST', '/v1/jobs', { group: 'browser-demo', description: 'no handler', handler: 'noSuchHandler', schedule_type: 'NONE' });
    assert.equal(refused.status, 201);
    await page.goto(`${base}/console/#jobs`);
    await runOnce(refused.body.id, '');
    await page.waitForSelector('#log-note:not([hidden])', LONG);
    assert.match(await page.textContent('#log-note'), /No executor accepted this run/);
    assert.ok((await page.textContent('#trigger-msg')).length > 3, 'the trigger details say why');
    let logAsks = 0;
    const countLogs = (r) => { if (r.url().includes('/log?')) logAsks++; };
    page.on('request', countLogs);
    await new Promise((r) => setTimeout(r, 2500));
    page.off('request', countLogs);
    assert.equal(logAsks, 0, 'no log polling for a run that never reached an executor');
    assert.equal(await page.textContent('#run-log'), '', 'no "logFile not exists" lines');
    assert.equal(await page.isVisible('#run-log'), false, 'no empty log box');
    await shot('09-run-not-sent');
    assert.equal((await csrfFetch('DELETE', `/v1/jobs/${refused.body.id}`)).status, 204);

    // Run the XSS-parameter job: its log, result and parameter show as text.
    await page.goto(`${base}/console/#jobs`);
    await runOnce(2, XSS2);
    await page.waitForFunction(() => document.getElementById('run-status')?.dataset.status === 'success', null, LONG);
    await page.waitForFunction((x) => document.getElementById('run-log').textContent.includes(`param=${x}`), XSS2, LONG);
    assert.equal(await page.textContent('#run-param'), XSS2);
    assert.equal(await page.isVisible('#kill'), false, 'no Kill on a finished run');
    await noXss('the run log');
    await page.goto(`${base}/console/#runs`);
    await page.waitForSelector('#runs tbody tr td.param');
    assert.ok((await page.locator('#runs td.param').allTextContents()).includes(XSS2));
    await noXss('runs');
    // Times in the runs list use the job's zone, named.
    assert.match(await page.textContent('#runs tbody tr td.at'), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|Europe\/Berlin)$/);
    // The list refreshes by itself, keeping its filter: a new run of job 2 appears unasked.
    await page.selectOption('.filters select[name=status]', 'success');
    // Counted once the filtered list is shown (the unfiltered one has successes too).
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('#runs tbody tr')];
      return rows.length >= 1 && rows.every((r) => r.querySelector('td.st-success'));
    });
    const before = await page.locator('#runs tbody tr').count();
    const fresh = await csrfFetch('POST', '/v1/jobs/2/trigger', { param: 'auto refresh' });
    assert.equal(fresh.status, 202);
    await page.waitForSelector(`#runs tbody tr[data-run="${fresh.body.run_id}"]`, { timeout: 40000 });
    assert.equal(await page.inputValue('.filters select[name=status]'), 'success', 'the filter stays');
    assert.ok((await page.locator('#runs tbody tr').count()) > before);
    // Read in one go: the list may refresh between two reads (job 2's child runs too).
    assert.ok(await page.evaluate(() => [...document.querySelectorAll('#runs tbody tr')].every((r) => r.querySelector('td.st-success'))), 'only successful runs');
    await page.selectOption('.filters select[name=status]', '');
    // Job 1 is job 2's child: its success started job 1 (trigger type "Parent job").
    await waitFor(async () => {
      await page.click('.filters button:has-text("Refresh")');
      return (await page.locator('#runs tbody td:has-text("Parent job")').count()) > 0;
    }, 'the child job to run', 60000);
    // Filter by status: the failing job's run and its retry (the killed run is listed as killed).
    await page.selectOption('.filters select[name=status]', 'failed');
    await page.waitForFunction(() => [...document.querySelectorAll('#runs tbody tr')].length === 2
      && [...document.querySelectorAll('#runs tbody tr td:nth-child(7)')].every((x) => x.className === 'st-failed'));
    await shot('10-runs');
    await page.selectOption('.filters select[name=status]', '');
    await page.waitForFunction(() => document.querySelectorAll('#runs tbody tr').length >= 3);
    const allRuns = await page.locator('#runs tbody tr').count();
    // Time range on the scheduled time, asked of the server (datetime-local is the browser's zone).
    // A datetime-local value in UTC, in the form the browser keeps: it drops zero seconds, and
    // Playwright refuses a value that does not read back as written ("Malformed value").
    const local = (ms) => new Date(ms).toISOString().slice(0, 19).replace(/:00$/, '');
    const asked = page.waitForRequest((r) => r.url().includes('/v1/runs?') && r.url().includes('from='));
    await page.fill('.filters input[name=from]', local(Date.now() + 3600000));
    await asked;
    await page.waitForFunction(() => document.querySelectorAll('#runs tbody tr').length === 0 && document.getElementById('run-count').textContent === '0');
    await page.fill('.filters input[name=from]', local(Date.now() - 3600000));
    await page.waitForFunction((n) => document.querySelectorAll('#runs tbody tr').length === n, allRuns);
    await page.fill('.filters input[name=to]', local(Date.now() - 1800000));
    await page.waitForFunction(() => document.querySelectorAll('#runs tbody tr').length === 0);
    await page.fill('.filters input[name=to]', '');
    await page.waitForFunction((n) => document.querySelectorAll('#runs tbody tr').length === n, allRuns);
    assert.equal(await page.isVisible('#more-runs'), false, 'one page holds them all');
    await page.fill('.filters input[name=from]', '');
    // "Runs of this job" from the jobs list opens the runs filtered by that job.
    await page.goto(`${base}/console/#jobs`);
    await page.click('#jobs tr[data-job="2"] a.job-runs');
    await page.waitForSelector('#runs tbody tr');
    assert.equal(await page.inputValue('.filters input[name=job]'), '#2 hello job');
    // The job filter searches the admin's jobs as one types, instead of listing them all.
    await page.fill('.filters input[name=job]', '');
    await page.waitForFunction(() => [...document.querySelectorAll('#runs td.job')].some((x) => x.textContent !== '#2 hello job'));
    await page.fill('.filters input[name=job]', 'glue');
    await page.waitForFunction(() => [...document.querySelectorAll('#job-choices option')].map((o) => o.value).join('|') === '#3 glue job');
    await page.fill('.filters input[name=job]', '#2 hello job');
    await page.waitForFunction(() => [...document.querySelectorAll('#runs td.job')].every((x) => x.textContent === '#2 hello job'));
    assert.ok((await page.locator('#runs td.job').allTextContents()).every((x) => x === '#2 hello job'), 'only job 2');

    await page.goto(`${base}/console/#jobs`);
    await page.waitForSelector('#jobs tr[data-job="1"]');
    // Backfill two past days of the (stopped) daily job from its menu: the list shows it done
    // with both runs; a finished backfill offers no cancel.
    await rowAction(1, 'backfill');
    await page.waitForSelector('#backfill-form');
    await page.fill('#backfill-form input[name=from]', '2026-10-01T00:00');
    await page.fill('#backfill-form input[name=to]', '2026-10-02T23:59:59');
    await page.fill('#backfill-form input[name=at_once]', '2');
    await page.click('#backfill-form button[type=submit]');
    await page.waitForSelector('#backfills tbody tr');
    await page.waitForFunction(() => /^2 \/ 2 run/.test(document.querySelector('#backfills tbody tr td.progress')?.textContent || ''), null, { timeout: 60_000 });
    await page.waitForFunction(() => !document.querySelector('#backfills tbody tr .cancel-backfill'), null, { timeout: 30_000 });
    const [backfill] = (await csrfFetch('GET', '/v1/jobs/1/backfills')).body;
    assert.equal(backfill.fires, 2, 'one run per day of the range');
    await shot('05-jobs-backfill');

    // The failing job is not part of what follows.
    assert.equal((await csrfFetch('DELETE', `/v1/jobs/${failing.body.id}`)).status, 204);

    // Business calendars: CN made in the form, its holidays and make-up workday typed a line
    // each (a range for National Day); a mistake is named by its line before anything is sent.
    // 2025's holidays are past, so one more on the first weekday after today (in Shanghai)
    // gives the preview a holiday to skip.
    const shanghaiToday = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Shanghai', year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
    let soon = '';
    for (let k = 1; !soon; k++) {
      const d = new Date(Date.parse(`${shanghaiToday}T00:00:00Z`) + k * 86_400_000);
      if (d.getUTCDay() >= 1 && d.getUTCDay() <= 5) soon = d.toISOString().slice(0, 10);
    }
    await page.click('a[href="#calendars"]');
    await page.waitForSelector('#no-calendars');
    await page.click('#add-calendar');
    await page.fill('#calendar-form input[name=name]', 'CN');
    await page.fill('#calendar-form input[name=description]', 'China');
    await page.fill('#calendar-form input[name=time_zone]', 'Asia/Shanghai');
    assert.deepEqual(await page.locator('#calendar-form input[name=workdays]:checked').evaluateAll((b) => b.map((x) => x.value)), ['MON', 'TUE', 'WED', 'THU', 'FRI'], 'Monday to Friday to start with');
    await page.fill('#calendar-form textarea[name=excluded]', '2025-10-01..2025-10-03 National Day\n2025-10-32 National Day');
    await page.fill('#calendar-form textarea[name=included]', '2025-10-11 make-up workday');
    let calendarPosts = 0;
    const countPosts = (r) => { if (r.method() === 'POST' && new URL(r.url()).pathname === '/v1/calendars') calendarPosts++; };
    page.on('request', countPosts);
    await page.click('#calendar-form button[type=submit]');
    await page.waitForSelector('#calendar-form label:has(textarea[name=excluded]) .field-err');
    assert.equal(await page.textContent('#calendar-form .field-err'), 'line 2: "2025-10-32" is not a date (YYYY-MM-DD)');
    assert.equal(await page.getAttribute('#calendar-form textarea[name=excluded]', 'aria-invalid'), 'true');
    assert.equal(calendarPosts, 0, 'nothing was sent');
    // What only the admin checks (a name over 100 characters) comes back naming the entry
    // (excluded[3], the fourth date): the form names the line that entry was typed on.
    await page.fill('#calendar-form textarea[name=excluded]', `2025-10-01..2025-10-03 National Day\n${soon} ${'x'.repeat(101)}`);
    assert.equal(await page.locator('#calendar-form .field-err').count(), 0, 'editing the field clears its error');
    await page.click('#calendar-form button[type=submit]');
    await page.waitForSelector('#calendar-form label:has(textarea[name=excluded]) .field-err');
    assert.match(await page.textContent('#calendar-form .field-err'), /^line 2: .*100/);
    assert.equal(calendarPosts, 1, 'sent once');
    page.off('request', countPosts);
    await page.fill('#calendar-form textarea[name=excluded]', `2025-10-01..2025-10-03 National Day\n${soon} Test holiday`);
    await shot('05-calendar-form');
    await page.click('#calendar-form button[type=submit]');
    await page.waitForSelector('#calendars tr[data-calendar=CN]');
    assert.deepEqual(await page.locator('#calendars tr[data-calendar=CN] td').evaluateAll((c) => c.slice(0, 7).map((x) => x.textContent)),
      ['CN', 'China', 'Asia/Shanghai', 'Mon–Fri', '4', '1', 'unused']);
    const cn = (await csrfFetch('GET', '/v1/calendars/CN')).body;
    assert.deepEqual(cn.excluded.map((d) => [d.date, d.name]), [['2025-10-01', 'National Day'], ['2025-10-02', 'National Day'], ['2025-10-03', 'National Day'], [soon, 'Test holiday']]);
    assert.deepEqual([cn.time_zone, cn.workdays, cn.included.map((d) => d.date)], ['Asia/Shanghai', ['MON', 'TUE', 'WED', 'THU', 'FRI'], ['2025-10-11']]);
    await shot('05-calendars');
    // Edited, the form shows the dates a line each (the range as its days); a save replaces it.
    await page.click('#calendars tr[data-calendar=CN] button.edit');
    await page.waitForSelector('#calendar-form');
    assert.equal(await page.isDisabled('#calendar-form input[name=name]'), true, 'a calendar keeps its name');
    assert.equal(await page.inputValue('#calendar-form textarea[name=excluded]'),
      `2025-10-01 National Day\n2025-10-02 National Day\n2025-10-03 National Day\n${soon} Test holiday`);
    assert.equal(await page.inputValue('#calendar-form textarea[name=included]'), '2025-10-11 make-up workday');
    await page.fill('#calendar-form input[name=description]', 'China (mainland)');
    await page.click('#calendar-form button[type=submit]');
    await page.waitForSelector('#calendars tr[data-calendar=CN] td.desc:text-is("China (mainland)")');
    assert.equal(await page.locator('#calendar-form').count(), 0, 'the form closes');
    assert.equal((await csrfFetch('GET', '/v1/calendars/CN')).body.excluded.length, 4, 'the dates kept');

    // A job that keeps to CN: the preview leaves out the holiday and the weekend, and says why.
    await page.goto(`${base}/console/#jobs/new`);
    await page.waitForSelector('#job-form select[name=calendar]');
    assert.deepEqual(await page.locator('#job-form select[name=calendar] option').evaluateAll((o) => o.map((x) => x.value)), ['', 'CN'], 'none first, then the calendars');
    await page.selectOption('#job-form select[name=group_id]', { label: 'browser-demo' });
    await page.fill('#job-form input[name=description]', 'business days');
    await page.fill('#job-form input[name=handler]', 'demoJobHandler');
    await page.fill('#job-form input[name=time_zone]', 'Asia/Shanghai');
    await page.fill('#job-form input[name=schedule_expr]', '0 0 9 * * ?');
    await page.waitForFunction(() => [...document.querySelectorAll('#preview li')].length === 5 && [...document.querySelectorAll('#preview li')].every((li) => li.dataset.local.includes('T09:00:00+08:00')), null, LONG);
    assert.equal(await page.locator('#preview-skipped li').count(), 0, 'no calendar, nothing skipped');
    const everyDay = await page.locator('#preview li').evaluateAll((l) => l.map((x) => x.dataset.local.slice(0, 10)));
    await page.selectOption('#job-form select[name=calendar]', 'CN');
    await page.waitForSelector('#preview-skipped li[data-why="Test holiday"]', LONG);
    const fireDays = await page.locator('#preview li').evaluateAll((l) => l.map((x) => x.dataset.local.slice(0, 10)));
    assert.notDeepEqual(fireDays, everyDay, 'the calendar changed the fire times');
    assert.equal(fireDays.length, 5);
    for (const day of fireDays) {
      assert.notEqual(day, soon, 'no fire on the holiday');
      assert.ok([1, 2, 3, 4, 5].includes(new Date(`${day}T00:00:00Z`).getUTCDay()), `a fire on a weekday only: ${day}`);
    }
    const skippedFires = await page.locator('#preview-skipped li').evaluateAll((l) => l.map((x) => ({ day: x.dataset.local.slice(0, 10), why: x.dataset.why, text: x.textContent })));
    assert.deepEqual(skippedFires.find((x) => x.why === 'Test holiday'), { day: soon, why: 'Test holiday', text: `${soon} 09:00:00 Asia/Shanghai — Test holiday` });
    // Six weekdays' fires (five and the holiday) cross a weekend.
    const weekend = skippedFires.find((x) => /^(SAT|SUN): not a workday$/.test(x.why));
    assert.ok(weekend, `a weekend day skipped: ${JSON.stringify(skippedFires)}`);
    assert.match(weekend.text, / — (Sat|Sun): not a workday$/);
    await shot('05-job-form-calendar');
    // Without a grid of fire times the calendar does not apply: hidden, and none is saved.
    await page.selectOption('#job-form select[name=schedule_type]', 'NONE');
    assert.equal(await page.isVisible('#job-form select[name=calendar]'), false);
    await page.selectOption('#job-form select[name=schedule_type]', 'CRON');
    assert.equal(await page.inputValue('#job-form select[name=calendar]'), 'CN');
    await page.click('#job-form button[type=submit]');
    const calRow = '#jobs tbody tr:has(td.desc:text-is("business days"))';
    await page.waitForSelector(`${calRow} a.calendar-tag[data-calendar=CN]`);
    const calJob = Number(await page.getAttribute(calRow, 'data-job'));
    assert.equal((await csrfFetch('GET', `/v1/jobs/${calJob}`)).body.calendar, 'CN', 'saved with the job');
    // The edit form shows it chosen.
    await page.goto(`${base}/console/#jobs/edit/${calJob}`);
    await page.waitForSelector('#job-form select[name=calendar]');
    assert.equal(await page.inputValue('#job-form select[name=calendar]'), 'CN');

    // The list counts who uses CN, and it cannot go while a job does (the admin says why).
    await page.goto(`${base}/console/#calendars`);
    await page.waitForSelector('#calendars tr[data-calendar=CN] td.used:text-is("1 jobs, 0 workflows")');
    dialogs.length = 0;
    await page.click('#calendars tr[data-calendar=CN] button.remove');
    await page.waitForSelector('#calendars-msg .err');
    assert.deepEqual(dialogs, ['Delete this?']);
    assert.equal(await page.locator('#calendars tr[data-calendar=CN]').count(), 1);
    assert.equal((await csrfFetch('DELETE', `/v1/jobs/${calJob}`)).status, 204);
    // Export CN as an .ics file, then import that file as a second calendar (its name suggested
    // by the file's, its zone the file's), and remove that one.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#calendars tr[data-calendar=CN] a.export')]);
    assert.equal(download.suggestedFilename(), 'CN.ics');
    const ics = await readFile(await download.path(), 'utf8');
    assert.match(ics, /^BEGIN:VCALENDAR/);
    assert.match(ics, /X-WR-TIMEZONE:Asia\/Shanghai/);
    assert.match(ics, /20251001/);
    await page.setInputFiles('#calendar-import input[name=ics]', { name: 'cn copy.ics', mimeType: 'text/calendar', buffer: Buffer.from(ics) });
    assert.equal(await page.inputValue('#calendar-import input[name=name]'), 'cn-copy');
    await page.click('#calendar-import button[type=submit]');
    await page.waitForSelector('#calendars tr[data-calendar=cn-copy]');
    assert.equal(await page.textContent('#calendars-msg'), 'Imported cn-copy: 4 holidays, 1 make-up workdays.');
    assert.deepEqual(await page.locator('#calendars tr[data-calendar=cn-copy] td').evaluateAll((c) => c.slice(2, 6).map((x) => x.textContent)), ['Asia/Shanghai', 'Mon–Fri', '4', '1']);
    await page.click('#calendars tr[data-calendar=cn-copy] button.remove');
    await page.waitForFunction(() => !document.querySelector('#calendars tr[data-calendar=cn-copy]'));
    assert.equal((await csrfFetch('GET', '/v1/calendars/cn-copy')).status, 404);
    // In Chinese.
    await page.selectOption('#lang', 'zh');
    await page.waitForSelector('#calendars tr[data-calendar=CN] td.workdays:text-is("周一–周五")');
    assert.equal(await page.textContent('h2'), '工作日历');
    await shot('05-calendars-zh');
    await page.selectOption('#lang', 'en');
    await page.waitForSelector('h2:text-is("Calendars")');

    // Dashboard: counts and the chart for a chosen range.
    await page.click('a[href="#dashboard"]');
    await page.waitForSelector('[data-stat=jobs]');
    assert.equal(await page.textContent('[data-stat=jobs]'), '3');
    await page.waitForFunction(() => Number(document.querySelector('[data-stat=runs_in_range]').textContent) >= 2);
    const today = new Date().toISOString().slice(0, 10);
    const weekAgo = new Date(Date.now() - 6 * 86400000).toISOString().slice(0, 10);
    await page.fill('#range-from', weekAgo);
    await page.fill('#range-to', today);
    await page.click('#refresh');
    await page.waitForFunction(() => document.querySelectorAll('#chart .bar').length === 7);
    await page.waitForFunction((d) => {
      const s = document.querySelector(`#chart .bar[data-day="${d}"] .s`);
      return s && Number(s.dataset.h) >= 1 && s.getBoundingClientRect().height > 0;
    }, today);
    // The chart fills its card's width.
    const [chartW, cardW] = await page.$eval('#chart', (el) => [el.getBoundingClientRect().width, el.parentElement.clientWidth]);
    assert.ok(chartW >= cardW * 0.9, `chart uses its card: ${chartW} of ${cardW}`);
    const [lastRight, chartRight] = await page.$eval('#chart', (el) => [el.lastElementChild.getBoundingClientRect().right, el.getBoundingClientRect().right]);
    assert.ok(chartRight - lastRight < 90, 'bars spread over the whole chart');
    await shot('02-dashboard');
    // Presets: today, 7 and 30 days.
    await page.click('#preset-30');
    await page.waitForFunction(() => document.querySelectorAll('#chart .bar').length === 30);
    assert.equal(await page.inputValue('#range-to'), today);
    await shot('02-dashboard-30-days');
    await page.click('#preset-1');
    await page.waitForFunction(() => document.querySelectorAll('#chart .bar').length === 1);
    await page.click('#preset-7');
    await page.waitForFunction(() => document.querySelectorAll('#chart .bar').length === 7);

    // A job in the other group; without the CSRF header a change is refused.
    const other = await csrfFetch('POST', '/v1/jobs', { group: 'other-team', description: 'secret job', handler: 'demoJobHandler', schedule_type: 'NONE' });
    assert.equal(other.status, 201);
    const noCsrf = await page.evaluate(async () => (await fetch('/v1/jobs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status);
    assert.equal(noCsrf, 403);

    // Users: add carol, then limit her to browser-demo, read-only.
    await page.click('a[href="#users"]');
    await page.click('#add-user');
    await page.fill('#user-form input[name=username]', 'carol');
    await page.fill('#user-form input[name=password]', 'carol-password');
    await page.click('#user-form button[type=submit]');
    await page.waitForSelector('tr[data-user=carol]');
    await page.click('tr[data-user=carol] button.edit');
    await page.selectOption('#user-form label:has-text("browser-demo") select', 'viewer');
    await page.click('#user-form button[type=submit]');
    await page.waitForSelector('tr[data-user=carol] td:has-text("browser-demo (viewer)")');
    // Dave edits browser-demo's jobs.
    await page.click('#add-user');
    await page.fill('#user-form input[name=username]', 'dave');
    await page.fill('#user-form input[name=password]', 'dave-password');
    await page.selectOption('#user-form label:has-text("browser-demo") select', 'editor');
    await page.click('#user-form button[type=submit]');
    await page.waitForSelector('tr[data-user=dave] td:has-text("browser-demo (editor)")');
    await shot('11-users');
    // A group's members and their roles, on the Executors page: carol made an operator there
    // and back, a new member added and taken away again.
    await page.click('a[href="#executors"]');
    await page.click('tr[data-app="browser-demo"] button.members');
    await page.waitForSelector('#members tr[data-member=carol]');
    assert.deepEqual(await page.locator('#member-list tr[data-member]').evaluateAll((r) => r.map((x) => [x.dataset.member, x.querySelector('select').value])),
      [['carol', 'viewer'], ['dave', 'editor']]);
    // Each change draws the panel again from the members the admin answers.
    const redrawn = () => page.waitForResponse((r) => r.url().endsWith('/members') && r.request().method() === 'GET');
    await Promise.all([redrawn(), page.selectOption('#members tr[data-member=carol] select', 'operator')]);
    await page.waitForFunction(() => document.querySelector('#members tr[data-member=carol] select')?.value === 'operator');
    const carolNow = (await csrfFetch('GET', '/v1/users')).body.find((u) => u.username === 'carol');
    assert.deepEqual(carolNow.group_roles.map((g) => g.role), ['operator']);
    await Promise.all([redrawn(), page.selectOption('#members tr[data-member=carol] select', 'viewer')]);
    await page.fill('#member-form input[name=username]', 'nobody-here');
    await page.click('#member-form button[type=submit]');
    await page.waitForSelector('#members p.err');
    await shot('11b-members');
    await page.click('a[href="#audit"]');
    // Entries say what changed on which object; the route stays in the cell's title.
    const userEdit = '#audit tr:has(td.action[data-action="PUT /v1/users/{id}"])';
    await page.waitForSelector(userEdit);
    assert.match(await page.textContent(`${userEdit} td.action`), /^Changed: /);
    assert.match(await page.textContent(`${userEdit} td.target`), /^User #\d+$/);
    assert.ok(await page.locator('#audit td.action:text-is("Start")').count() >= 1, 'starting a job is named');
    assert.ok(await page.locator('#audit td.target:has-text("Job #1")').count() >= 1);
    await noXss('audit');
    await shot('12-audit');

    // Clear finished runs of a group.
    await page.click('a[href="#runs"]');
    await page.waitForSelector('#runs tbody tr');
    await page.selectOption('.filters select[name=group_id]', { label: 'browser-demo' });
    await page.fill('input[name=older_than_days]', '0');
    await page.click('#clear-runs');
    await page.waitForSelector('#cleared:has-text("Deleted")');
    assert.ok(Number((await page.textContent('#cleared')).split(':')[1]) >= 2, 'finished runs deleted');

    // Switch language, and back.
    await page.selectOption('#lang', 'zh');
    await page.waitForSelector('h2:has-text("调度日志")');
    await page.click('a[href="#jobs"]');
    await page.waitForSelector('h2:has-text("任务管理")');
    await shot('13-chinese');
    // Option names are translated, each with its explanation.
    await page.goto(`${base}/console/#jobs/edit/2`);
    await page.waitForSelector('#job-form');
    assert.equal(await page.textContent('#job-form select[name=block_strategy] option:checked'), '单机串行');
    assert.equal(await page.textContent('#job-form select[name=route_strategy] option:checked'), '第一个');
    assert.equal(await page.textContent('#job-form select[name=misfire_strategy] option:checked'), '忽略');
    assert.match(await page.textContent('#help-block_strategy'), /排队/);
    await shot('13-chinese-job-form');
    await page.selectOption('#lang', 'en');
    await page.waitForSelector('h2:has-text("Jobs")');

    // Carol sees only browser-demo, read-only; the other group is refused even by URL.
    await page.click('#logout');
    await page.waitForSelector('#login');
    await page.fill('input[name=username]', 'carol');
    await page.fill('input[name=password]', 'carol-password');
    await page.click('#login button[type=submit]');
    await page.waitForSelector('[data-stat=jobs]');
    assert.equal(await page.textContent('[data-stat=jobs]'), '3');
    await page.goto(`${base}/console/#jobs`);
    await page.waitForSelector('#jobs tbody tr');
    const descs = await page.locator('#jobs td.desc').allTextContents();
    assert.ok(!descs.includes('secret job'), 'carol does not see the other group');
    assert.equal(descs.length, 3);
    assert.equal(await page.locator('#new-job').count(), 0, 'read-only: no add button');
    assert.equal(await page.locator('#jobs tbody button, #jobs details.menu').count(), 0, 'read-only: no actions');
    await noXss('jobs as carol');
    await page.goto(`${base}/console/#executors`);
    await page.waitForSelector('#groups tr[data-app]');
    assert.deepEqual(await page.locator('#groups tr[data-app]').evaluateAll((r) => r.map((x) => x.dataset.app)), ['browser-demo']);
    assert.equal(await page.locator('a[href="#users"]').count(), 0, 'no user management for users');
    // Workflows: those whose every node's group she sees (none yet), and she, a viewer, may not
    // make one.
    assert.equal(await page.locator('a[href="#workflows"]').count(), 1, 'workflows for users too');
    assert.deepEqual(await page.evaluate(async () => { const r = await fetch('/v1/workflows'); return [r.status, await r.json()]; }), [200, []]);
    assert.equal((await csrfFetch('POST', '/v1/workflows', { name: 'x' })).status, 403, 'a viewer makes no workflow');
    // Calendars: she reads them (a job's form lists them), exports them, and changes none.
    await page.goto(`${base}/console/#calendars`);
    await page.waitForSelector('#calendars tr[data-calendar=CN]');
    assert.equal(await page.locator('#add-calendar, #calendar-import, #calendars button').count(), 0, 'no writing for users');
    assert.equal(await page.locator('#calendars tr[data-calendar=CN] a.export').count(), 1);
    assert.equal((await csrfFetch('DELETE', '/v1/calendars/CN')).status, 403, 'a user removes no calendar');
    const secretId = other.body.id;
    const peek = await page.evaluate(async (id) => (await fetch(`/v1/jobs/${id}`)).status, secretId);
    assert.equal(peek, 403);
    const write = await csrfFetch('POST', '/v1/jobs/1/start');
    assert.equal(write.status, 403, 'read-only user cannot start a job');
    await shot('14-limited-user');
    // Even a read-only user may change their own password.
    await page.click('#who a');
    await page.fill('#password-form input[name=current_password]', 'carol-password');
    await page.fill('#password-form input[name=new_password]', 'carol-password-2');
    await page.click('#password-form button[type=submit]');
    await page.waitForSelector('#password-form .ok');

    // Dave operates browser-demo's jobs but not its group: no group editing, and the server
    // refuses it too. Child jobs on offer are his group's only; clearing runs needs a group.
    await page.click('#logout');
    await page.waitForSelector('#login');
    await page.fill('input[name=username]', 'dave');
    await page.fill('input[name=password]', 'dave-password');
    await page.click('#login button[type=submit]');
    await page.waitForSelector('[data-stat=jobs]');
    await page.goto(`${base}/console/#executors`);
    await page.waitForSelector('#groups tr[data-app="browser-demo"]');
    assert.equal(await page.locator('#add-group').count(), 0, 'no Add for a user');
    assert.equal(await page.locator('#groups button').count(), 0, 'no Edit or Remove for a user');
    assert.ok(await page.isVisible('#groups-note'), 'the page says why');
    await shot('15-user-executors');
    const demoGroup = (await csrfFetch('GET', '/v1/groups/browser-demo')).body;
    const grab = await csrfFetch('PUT', `/v1/groups/${demoGroup.id}`, { addresses: ['http://127.0.0.1:9'], address_type: 'manual' });
    assert.equal(grab.status, 403, 'a user cannot point the group at another address');
    await page.goto(`${base}/console/#jobs/new`);
    await page.waitForSelector('#job-form');
    const offered = await page.locator('#job-form select[name=child_job_ids] option').allTextContents();
    assert.ok(offered.length >= 3 && !offered.some((o) => o.includes('secret job')), `only dave's jobs are offered: ${offered}`);
    const sneak = await csrfFetch('PATCH', '/v1/jobs/2', { child_job_ids: [secretId] });
    assert.equal(sneak.status, 403, 'a child job in another group is refused');
    await page.goto(`${base}/console/#runs`);
    await page.waitForSelector('#runs thead');
    assert.equal(await page.isDisabled('#clear-runs'), true, 'Clear needs a group or job');
    assert.ok(await page.isVisible('#clear-note'));
    await shot('16-user-runs-clear');
    await page.selectOption('.filters select[name=group_id]', { label: 'browser-demo' });
    assert.equal(await page.isDisabled('#clear-runs'), false);
    assert.equal(await page.isVisible('#clear-note'), false);

    // Dave makes an API key for a tool: an editor of his group, its token shown once; the key
    // reads his group only, is refused on another's job, and stops at once when he revokes it.
    await page.click('a[href="#api-keys"]');
    await page.waitForSelector('#api-keys');
    await page.click('#add-key');
    assert.deepEqual(await page.locator('#key-form select[name=role] option').evaluateAll((o) => o.map((x) => x.value)), ['viewer', 'operator', 'editor'],
      'a user below admin cannot make an admin key');
    await page.fill('#key-form input[name=name]', 'dave-deploy');
    await page.selectOption('#key-form select[name=role]', 'editor');
    await page.selectOption('#key-form select[name=group_ids]', { label: 'browser-demo' });
    await page.fill('#key-form input[name=expires_days]', '7');
    await page.click('#key-form button[type=submit]');
    const token = await page.inputValue('#new-key-token');
    assert.match(token, /^chk_[0-9a-f]{64}$/);
    await shot('16b-api-key-made');
    const asKey = async (path, method = 'GET') => {
      const r = await fetch(`${base}${path}`, { method, headers: { Authorization: `Bearer ${token}` } });
      return { status: r.status, body: await r.json().catch(() => null) };
    };
    const keyJobs = await asKey('/v1/jobs');
    assert.equal(keyJobs.status, 200);
    assert.ok(keyJobs.body.length > 0 && keyJobs.body.every((j) => j.group_id === demoGroup.id), 'the key reads its group only');
    assert.equal((await asKey(`/v1/jobs/${secretId}`)).status, 403, 'another group is refused');
    await page.click('#key-made button');
    await page.waitForSelector('#api-keys tr[data-key="dave-deploy"] td.key-active');
    assert.equal(await page.locator(`#api-keys :text("${token.slice(12)}")`).count(), 0, 'the token is not shown again');
    assert.match(await page.textContent('#api-keys tr[data-key="dave-deploy"]'), /Editor.*browser-demo/);
    await page.click('#api-keys tr[data-key="dave-deploy"] button.revoke');
    await page.waitForSelector('#api-keys tr[data-key="dave-deploy"] td.key-revoked');
    assert.ok(dialogs.some((d) => d.includes('dave-deploy')), 'revoking asks first');
    const gone = await asKey('/v1/jobs');
    assert.equal(gone.status, 401);
    assert.equal(gone.body.error, 'this API key was revoked');
    await shot('16c-api-key-revoked');
    await page.goto(`${base}/console/#runs`);

    // The header wraps on a narrow screen instead of overflowing, in both languages.
    await page.setViewportSize({ width: 360, height: 740 });
    for (const lang of ['en', 'zh']) {
      await page.selectOption('#lang', lang);
      await page.waitForSelector('#runs thead');
      const [scroll, client] = await page.$eval('#top', (el) => [el.scrollWidth, el.clientWidth]);
      assert.ok(scroll <= client, `header fits in 360 px (${lang}): ${scroll} > ${client}`);
      const [pageScroll, pageClient] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      assert.ok(pageScroll <= pageClient, `the page does not scroll sideways (${lang}): ${pageScroll} > ${pageClient}`);
      assert.ok(await page.isVisible('#logout'), 'logout stays reachable');
      await shot(`17-narrow-${lang}`);
    }
    await page.selectOption('#lang', 'en');
    await page.setViewportSize({ width: 1280, height: 800 });

    // The admin sees dave's refused attempts in the audit log, filtered by user and action.
    await page.click('#logout');
    await page.waitForSelector('#login');
    await page.fill('input[name=username]', 'admin');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('[data-stat=jobs]');
    await page.goto(`${base}/console/#audit`);
    await page.waitForSelector('#audit tbody tr');
    await page.fill('.filters input[name=username]', 'dave');
    await page.fill('.filters input[name=action]', 'groups');
    await page.waitForFunction((id) => {
      const rows = [...document.querySelectorAll('#audit tbody tr')];
      return rows.length === 1 && rows[0].querySelector('td.action').dataset.action === 'PUT /v1/groups/{key}' && rows[0].textContent.includes('403')
        && rows[0].querySelector('td.target').textContent === `Group ${id}`;
    }, demoGroup.id);
    await shot('18-audit-refused');
    await page.fill('.filters input[name=username]', '');
    await page.fill('.filters input[name=action]', '');
    await page.waitForFunction(() => document.querySelectorAll('#audit tbody tr').length > 10);
    const [docScroll, docClient] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(docScroll <= docClient, `audit details wrap: page ${docScroll} px wide in ${docClient}`);
    await page.fill('.filters input[name=from]', local(Date.now() + 3600000));
    await page.waitForFunction(() => document.querySelectorAll('#audit tbody tr').length === 0);

    // Workflows (admins only): a graph a -> b, a -> c built in the form, drawn as it is typed,
    // the server's complaints next to the tables; then an instance watched to its end, nodes
    // coloured by state, b's parameter made of a's result. The demo handler echoes its parameter.
    const wfJob = async (description, handler, param) => {
      const r = await csrfFetch('POST', '/v1/jobs', { group: 'browser-demo', description, handler, param, schedule_type: 'NONE' });
      assert.equal(r.status, 201);
      return r.body.id;
    };
    const sourceJob = await wfJob('wf source', 'demoJobHandler', XSS);
    const echoJob = await wfJob('wf echo', 'demoJobHandler', 'c-done');
    await page.click('a[href="#workflows"]');
    await page.click('#new-workflow');
    await page.waitForSelector('#wf-form');
    const WF_NAME = `flow ${XSS}`;
    await page.fill('#wf-form input[name=name]', WF_NAME);
    await page.fill('#wf-form input[name=description]', 'three nodes');
    await page.selectOption('#wf-form select[name=schedule_type]', 'CRON');
    await page.fill('#wf-form input[name=schedule_expr]', '0 0 3 * * ?');
    await page.fill('#wf-form input[name=time_zone]', 'Asia/Shanghai');
    await page.waitForFunction(() => document.querySelectorAll('#preview li').length === 5, null, LONG);
    const nodeRow = (i) => `#wf-nodes tbody tr:nth-child(${i})`;
    const edgeRow = (i) => `#wf-edges tbody tr:nth-child(${i})`;
    // A new workflow starts with one node, a; jobs are picked by name.
    assert.equal(await page.inputValue(`${nodeRow(1)} input[name=node_key]`), 'a');
    await page.selectOption(`${nodeRow(1)} select[name=node_job]`, { label: `${sourceJob} wf source` });
    await page.click('#add-node');
    await page.fill(`${nodeRow(2)} input[name=node_key]`, 'b');
    await page.selectOption(`${nodeRow(2)} select[name=node_job]`, { label: `${echoJob} wf echo` });
    await page.fill(`${nodeRow(2)} input[name=node_param]`, 'x={{a.result}}');
    await page.click('#add-node');
    await page.fill(`${nodeRow(3)} input[name=node_key]`, 'c');
    await page.selectOption(`${nodeRow(3)} select[name=node_job]`, { label: `${echoJob} wf echo` });
    // b is no parent of c: the server refuses this parameter (after the edge below).
    await page.fill(`${nodeRow(3)} input[name=node_param]`, '{{b.result}}');
    for (const [i, [from, to, when]] of [['a', 'b', 'success'], ['a', 'c', 'always'], ['a', 'zzz', 'failure']].entries()) {
      await page.click('#add-edge');
      await page.fill(`${edgeRow(i + 1)} input[name=edge_from]`, from);
      await page.fill(`${edgeRow(i + 1)} input[name=edge_to]`, to);
      await page.selectOption(`${edgeRow(i + 1)} select[name=edge_when]`, when);
    }
    // The drawing follows the tables: three boxes in two layers and two edges (the edge to no
    // node is not drawn), styled by condition.
    await page.waitForFunction(() => document.querySelectorAll('#wf-graph g.wf-node').length === 3 && document.querySelectorAll('#wf-graph path.wf-edge').length === 2);
    const boxAt = (k) => page.$eval(`#wf-graph g.wf-node[data-key="${k}"] rect`, (r) => { const b = r.getBoundingClientRect(); return { x: Math.round(b.x), y: Math.round(b.y) }; });
    const [boxA, boxB, boxC] = [await boxAt('a'), await boxAt('b'), await boxAt('c')];
    assert.ok(boxA.y < boxB.y && boxB.y === boxC.y && boxB.x !== boxC.x, `a above b and c, side by side: ${JSON.stringify([boxA, boxB, boxC])}`);
    assert.equal(await page.textContent('#wf-graph g.wf-node[data-key=b] text.wf-job'), `#${echoJob} wf echo`);
    assert.equal(await page.getAttribute('#wf-graph path.wf-edge[data-to=b]', 'class'), 'wf-edge when-success');
    assert.equal(await page.getAttribute('#wf-graph path.wf-edge[data-to=c]', 'class'), 'wf-edge when-always');
    assert.equal(await page.getAttribute('#wf-graph path.wf-edge[data-to=c]', 'marker-end'), 'url(#wf-arrow-always)');
    // The edge to no node is refused: the reason is shown next to the edge table, the edge marked.
    await page.click('#wf-form button[type=submit]');
    await page.waitForSelector('#wf-edges-err .field-err');
    assert.match(await page.textContent('#wf-edges-err'), /edge a -> zzz: no node 'zzz'/);
    assert.equal(await page.getAttribute(`${edgeRow(3)} input[name=edge_to]`, 'aria-invalid'), 'true');
    assert.equal(await page.locator('#wf-form [aria-invalid]').count(), 1, 'only that edge is marked');
    await shot('19-workflow-form-edge-error');
    await page.click(`${edgeRow(3)} button.remove-row`);
    assert.equal(await page.locator('#wf-edges-err .field-err').count(), 0, 'removing the edge clears its error');
    // Then c's parameter: the reason goes next to it, in c's row.
    await page.click('#wf-form button[type=submit]');
    await page.waitForSelector(`${nodeRow(3)} .field-err`);
    assert.match(await page.textContent(`${nodeRow(3)} .field-err`), /names no upstream node of 'c'/);
    assert.equal(await page.getAttribute(`${nodeRow(3)} input[name=node_param]`, 'aria-invalid'), 'true');
    await page.fill(`${nodeRow(3)} input[name=node_param]`, '');
    assert.equal(await page.locator('#wf-form .field-err, #wf-form [aria-invalid]').count(), 0, 'editing the field clears its error');
    // A node's own priority and concurrency key: out of bounds, refused in its row; '-' takes
    // its job's key away.
    await page.fill(`${nodeRow(3)} input[name=node_priority]`, '5000');
    await page.click('#wf-form button[type=submit]');
    await page.waitForSelector(`${nodeRow(3)} .field-err`);
    assert.match(await page.textContent(`${nodeRow(3)} .field-err`), /node 'c': must be between -1000 and 1000/);
    assert.equal(await page.getAttribute(`${nodeRow(3)} input[name=node_priority]`, 'aria-invalid'), 'true');
    await page.fill(`${nodeRow(3)} input[name=node_priority]`, '');
    await page.fill(`${nodeRow(3)} input[name=node_concurrency_key]`, 'warehouse-db');
    await page.fill(`${nodeRow(2)} input[name=node_priority]`, '7');
    await page.fill(`${nodeRow(2)} input[name=node_concurrency_key]`, '-');
    await page.waitForFunction(() => document.querySelectorAll('#wf-graph path.wf-edge').length === 2);
    await noXss('the workflow form', 1);
    await shot('19-workflow-form');
    await page.click('#wf-form button[type=submit]');
    await page.waitForSelector('#workflows tbody tr[data-workflow]');
    const flow = (await csrfFetch('GET', '/v1/workflows')).body.find((w) => w.name === WF_NAME);
    assert.deepEqual(flow.definition, {
      nodes: [
        { key: 'a', job_id: sourceJob, join: 'all' },
        { key: 'b', job_id: echoJob, param: 'x={{a.result}}', join: 'all', priority: 7, concurrency_key: '' },
        { key: 'c', job_id: echoJob, join: 'all', concurrency_key: 'warehouse-db' },
      ],
      edges: [{ from: 'a', to: 'b', when: 'success' }, { from: 'a', to: 'c', when: 'always' }],
    }, 'the graph saved is the one in the tables');
    const flowRow = `#workflows tr[data-workflow="${flow.id}"]`;
    assert.equal(await page.textContent(`${flowRow} td.name`), WF_NAME);
    assert.equal(await page.textContent(`${flowRow} td.schedule`), 'Cron 0 0 3 * * ?');
    await noXss('workflows');
    const wfAction = async (id, action) => {
      await page.click(`#workflows tr[data-workflow="${id}"] details.menu summary`);
      await page.click(`#workflows tr[data-workflow="${id}"] details.menu button[data-action="${action}"]`);
    };
    // Started, it shows its next fire in its zone; stopped again, none.
    await wfAction(flow.id, 'start');
    await page.waitForFunction((sel) => /^\d{4}-\d\d-\d\d 03:00:00 Asia\/Shanghai$/.test(document.querySelector(sel)?.textContent || ''), `${flowRow} td.next-fire`);
    await shot('20-workflows');
    await wfAction(flow.id, 'stop');
    await page.waitForSelector(`${flowRow} button[data-action=start]`, { state: 'attached' });
    assert.equal(await page.textContent(`${flowRow} td.next-fire`), '');

    // Trigger now opens the instance, which polls until every node is final.
    await wfAction(flow.id, 'trigger_now');
    await page.waitForFunction(() => /^#workflows\/instance\/\d+$/.test(location.hash));
    const instanceId = Number(/instance\/(\d+)/.exec(page.url())[1]);
    await page.waitForFunction(() => document.getElementById('wfi-state')?.dataset.state === 'succeeded'
      && document.querySelectorAll('#wfi-graph g.wf-node[data-state=succeeded]').length === 3, null, LONG);
    assert.equal(await page.textContent('#wfi-state'), 'Succeeded');
    assert.deepEqual(await page.$$eval('#wfi-graph g.wf-node rect', (rs) => rs.map((r) => getComputedStyle(r).fill)), Array(3).fill('rgb(172, 238, 187)'), 'the boxes are green');
    assert.equal(await page.locator('#wfi-graph path.wf-edge').count(), 2);
    assert.equal(await page.isVisible('#stop-instance'), false, 'no Stop on a finished instance');
    // b's parameter was x= and a's result: its result (the handler echoes it) says so.
    const resultOf = (k) => page.textContent(`#wfi-nodes tr[data-node="${k}"] td.result`);
    assert.equal(await resultOf('a'), XSS);
    assert.equal(await resultOf('b'), `x=${await resultOf('a')}`);
    assert.equal(await resultOf('c'), 'c-done');
    // A node's box shows its details; a succeeded node has nothing to retry, skip or mark.
    await page.click('#wfi-graph g.wf-node[data-key=b]');
    await page.waitForSelector('#wf-node-detail[data-node=b]');
    assert.equal(await page.textContent('#wf-node-detail .result'), `x=${XSS}`);
    assert.equal(await page.getAttribute('#wf-node-detail .state', 'data-state'), 'succeeded');
    assert.equal(await page.locator('#wf-node-detail button').count(), 0);
    assert.match(await page.getAttribute('#wfi-graph g.wf-node[data-key=b]', 'class'), /\bselected\b/);
    await noXss('the workflow instance', 1);
    await shot('21-workflow-instance');
    // A final instance is no longer polled.
    let instanceAsks = 0;
    const countInstance = (r) => { if (r.url().includes(`/v1/workflow-instances/${instanceId}`)) instanceAsks++; };
    page.on('request', countInstance);
    await new Promise((r) => setTimeout(r, 2500));
    page.off('request', countInstance);
    assert.equal(instanceAsks, 0, 'no polling of a finished instance');
    assert.equal(await page.textContent('#wfi-live'), '');
    // The node's run, with its log.
    await page.click('#wf-node-detail a.run-link');
    await page.waitForFunction(() => document.getElementById('run-status')?.dataset.status === 'success', null, LONG);
    assert.equal(await page.textContent('#run-param'), `x=${XSS}`);
    await page.waitForFunction((x) => document.getElementById('run-log').textContent.includes(`param=x=${x}`), XSS, LONG);
    await noXss('the run of a workflow node');
    // The workflow's instances, with a state filter.
    await page.goto(`${base}/console/#workflows/instances/${flow.id}`);
    await page.waitForSelector(`#wf-instances tr[data-instance="${instanceId}"] td.state[data-state=succeeded]`);
    await page.selectOption('.filters select[name=state]', 'failed');
    await page.waitForFunction(() => document.querySelectorAll('#wf-instances tbody tr').length === 0);

    // A running instance: its node is blue and the page polls; Stop, after a confirmation, kills
    // the node's run: the node is stopped (orange) and the instance says who stopped it.
    const sleepJob = await wfJob('wf sleeps', 'sleepJobHandler', '30');
    const slow = await csrfFetch('POST', '/v1/workflows', { name: 'sleeps', definition: { nodes: [{ key: 'nap', job_id: sleepJob }] } });
    assert.equal(slow.status, 201);
    const slowFired = await csrfFetch('POST', `/v1/workflows/${slow.body.id}/trigger`, {});
    assert.equal(slowFired.status, 202);
    await page.goto(`${base}/console/#workflows/instance/${slowFired.body.instance_id}`);
    await page.waitForFunction(() => document.querySelector('#wfi-graph g.wf-node[data-key=nap]')?.dataset.state === 'running', null, LONG);
    assert.equal(await page.$eval('#wfi-graph g.wf-node rect', (r) => getComputedStyle(r).fill), 'rgb(182, 227, 255)', 'a running node is blue');
    assert.equal(await page.textContent('#wfi-live'), '(live)');
    await shot('21-workflow-instance-running');
    dialogs.length = 0;
    await page.click('#stop-instance');
    assert.deepEqual(dialogs, ['Stop this instance? Its running nodes are killed.']);
    await page.waitForFunction(() => document.getElementById('wfi-state')?.dataset.state === 'stopped'
      && document.querySelector('#wfi-graph g.wf-node')?.dataset.state === 'stopped', null, LONG);
    assert.equal(await page.$eval('#wfi-graph g.wf-node rect', (r) => getComputedStyle(r).fill), 'rgb(255, 216, 181)', 'a stopped node is orange');
    assert.equal(await page.textContent('#wfi-stopped-by'), 'admin');
    assert.equal(await page.isVisible('#stop-instance'), false, 'no Stop once stopped');

    // A failed node fails the instance and leaves the node after it not run; marking it
    // succeeded sets the instance going again (and polling with it) to its end.
    const failJob = await wfJob('wf fails', 'failJobHandler', 'on purpose');
    const failingFlow = await csrfFetch('POST', '/v1/workflows', { name: 'fails, then goes on', definition: { nodes: [{ key: 'f', job_id: failJob }, { key: 'after', job_id: echoJob }], edges: [{ from: 'f', to: 'after' }] } });
    assert.equal(failingFlow.status, 201);
    const failingFired = await csrfFetch('POST', `/v1/workflows/${failingFlow.body.id}/trigger`, { trigger_type: 'MANUAL' });
    assert.equal(failingFired.status, 202);
    await page.goto(`${base}/console/#workflows/instance/${failingFired.body.instance_id}`);
    await page.waitForFunction(() => document.getElementById('wfi-state')?.dataset.state === 'failed', null, LONG);
    assert.deepEqual(await page.$$eval('#wfi-graph g.wf-node', (gs) => gs.map((g) => [g.dataset.key, g.dataset.state])), [['f', 'failed'], ['after', 'not_run']]);
    await page.click('#wfi-graph g.wf-node[data-key=f]');
    await page.waitForSelector('#wf-node-detail[data-node=f]');
    assert.equal(await page.textContent('#wf-node-detail .result'), 'on purpose');
    assert.deepEqual(await page.$$eval('#wf-node-detail button', (bs) => bs.map((b) => b.dataset.action)), ['retry', 'skip', 'succeed']);
    await shot('21-workflow-instance-failed');
    await page.click('#wf-node-detail button[data-action=succeed]');
    await page.waitForFunction(() => document.getElementById('wfi-state')?.dataset.state === 'succeeded'
      && document.querySelector('#wfi-graph g.wf-node[data-key=after]')?.dataset.state === 'succeeded', null, LONG);
    assert.equal(await page.getAttribute('#wfi-graph g.wf-node[data-key=f]', 'data-state'), 'succeeded');
    // In Chinese too.
    await page.selectOption('#lang', 'zh');
    await page.waitForFunction(() => document.getElementById('wfi-state')?.textContent === '成功');
    await shot('21-workflow-instance-zh');
    await page.selectOption('#lang', 'en');
    await page.waitForFunction(() => document.getElementById('wfi-state')?.textContent === 'Succeeded');
    // The same failure once more; with its job mended, Retry runs the node again (a new run,
    // with the job as it is now) and the instance goes on to its end.
    const failedAgain = await csrfFetch('POST', `/v1/workflows/${failingFlow.body.id}/trigger`, { trigger_type: 'MANUAL' });
    assert.equal(failedAgain.status, 202);
    await page.goto(`${base}/console/#workflows/instance/${failedAgain.body.instance_id}`);
    await page.waitForFunction(() => document.getElementById('wfi-state')?.dataset.state === 'failed', null, LONG);
    const nodeRunOf = async (instance, key) => (await csrfFetch('GET', `/v1/workflow-instances/${instance}`)).body.nodes.find((n) => n.node === key).run_id;
    const failedRun = await nodeRunOf(failedAgain.body.instance_id, 'f');
    assert.equal((await csrfFetch('PUT', `/v1/jobs/${failJob}`, { handler: 'demoJobHandler', param: 'mended' })).status, 200);
    await page.click('#wfi-graph g.wf-node[data-key=f]');
    await page.click('#wf-node-detail button[data-action=retry]');
    await page.waitForFunction(() => document.getElementById('wfi-state')?.dataset.state === 'succeeded'
      && document.querySelector('#wfi-graph g.wf-node[data-key=f]')?.dataset.state === 'succeeded'
      && document.querySelector('#wfi-graph g.wf-node[data-key=after]')?.dataset.state === 'succeeded', null, LONG);
    const retriedRun = await nodeRunOf(failedAgain.body.instance_id, 'f');
    assert.notEqual(retriedRun, failedRun, 'the retry is a run of its own');
    assert.equal(await page.getAttribute('#wf-node-detail a.run-link', 'href'), `#runs/${retriedRun}`, 'the node opens its new run');
    assert.equal(await page.textContent('#wf-node-detail .result'), 'mended', "the result of the job as it is now");
    await shot('21-workflow-instance-retried');
    // Edited, the form holds the saved graph; renaming a node takes its edges along.
    await page.goto(`${base}/console/#workflows/edit/${flow.id}`);
    await page.waitForSelector('#wf-form');
    assert.equal(await page.locator('#wf-nodes tbody tr').count(), 3);
    assert.equal(await page.inputValue(`${nodeRow(2)} input[name=node_param]`), 'x={{a.result}}');
    assert.deepEqual([await page.inputValue(`${nodeRow(2)} input[name=node_priority]`), await page.inputValue(`${nodeRow(2)} input[name=node_concurrency_key]`)], ['7', '-']);
    assert.equal(await page.inputValue(`${nodeRow(3)} input[name=node_concurrency_key]`), 'warehouse-db');
    await page.fill(`${nodeRow(3)} input[name=node_key]`, 'c2');
    assert.equal(await page.inputValue(`${edgeRow(2)} input[name=edge_to]`), 'c2');
    await page.waitForSelector('#wf-graph g.wf-node[data-key=c2]');
    await page.click('#wf-form button[type=submit]');
    await page.waitForSelector(`#workflows tr[data-workflow="${flow.id}"]`);
    assert.deepEqual((await csrfFetch('GET', `/v1/workflows/${flow.id}`)).body.definition.edges.map((e) => e.to), ['b', 'c2']);
    // The audit log names a node's operation and its instance.
    await page.goto(`${base}/console/#audit`);
    await page.fill('.filters input[name=action]', 'workflow-instances');
    await page.waitForFunction(() => [...document.querySelectorAll('#audit tbody tr')].some((r) => r.querySelector('td.action').textContent === 'Mark succeeded'
      && /^Workflow instance #\d+$/.test(r.querySelector('td.target').textContent)));
    // Removed from the list's menu, after a confirmation.
    await page.goto(`${base}/console/#workflows`);
    dialogs.length = 0;
    await wfAction(failingFlow.body.id, 'remove');
    await page.waitForFunction((id) => !document.querySelector(`#workflows tr[data-workflow="${id}"]`), failingFlow.body.id);
    assert.deepEqual(dialogs, ['Delete this?']);
    assert.deepEqual(errors, [], 'no script errors');
  } catch (e) {
    // Keep what the page looked like when it failed, next to the other screenshots.
    for (const p of browser.pages()) await p.screenshot({ path: join(shots, 'failure.png'), fullPage: true }).catch(() => {});
    throw e;
  } finally {
    await browser.close();
  }
});
