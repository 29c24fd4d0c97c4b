// End-to-end test of the Chime web console in headless Chromium (Debian's `chromium`,
// driven by playwright-core; no browser download). Starts the real `chime admin` on a temp
// SQLite database and the demo executor, then walks the console as a person would.
//
// Needs: CHIME_BIN_DIR (directory with `chime` and `chime-demo-executor`, default
// $CARGO_TARGET_DIR/debug or target/debug), CHROMIUM (default /usr/bin/chromium).
// Screenshots go to target/browser-screenshots/ (or CHIME_SCREENSHOTS).
//
// Every wait is on a condition (a selector, a text, a status), with generous limits for a
// slow, shared machine; nothing asserts on elapsed time.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const binDir = process.env.CHIME_BIN_DIR || join(process.env.CARGO_TARGET_DIR || join(repo, 'target'), 'debug');
const shots = process.env.CHIME_SCREENSHOTS || join(repo, 'target', 'browser-screenshots');
mkdirSync(shots, { recursive: true });
const PASSWORD = 'browser-test-pw';
// Stored XSS attempts: if any of these ever runs, window.__xss becomes defined.
const XSS = '<img src=x onerror="window.__xss=1">';
const XSS2 = '<script>window.__xss=2</script><svg onload="window.__xss=3">';

const children = [];
const tmpDirs = [];
function stopChildren() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
}
const running = (c) => c.exitCode === null && c.signalCode === null;
after(async () => {
  // Newest first: the executor says goodbye to the admin while the admin still listens.
  // Each gets a few seconds to shut down cleanly; whatever is left is killed.
  for (const c of [...children].reverse()) {
    if (running(c)) c.kill('SIGTERM');
    const end = Date.now() + 5000;
    while (running(c) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  }
  for (const c of children) if (c.exitCode === null && c.signalCode === null) { console.error(`# ${c.spawnfile} did not stop on SIGTERM; killing it`); c.kill('SIGKILL'); }
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});
// Also when the runner is interrupted: never leave an admin or executor behind.
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => { stopChildren(); process.exit(130); });
process.once('exit', stopChildren);

function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
}

function start(bin, args, env) {
  const c = spawn(join(binDir, bin), args, { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  c.on('error', (e) => { console.error(`${bin}: ${e.message}`); });
  children.push(c);
  return c;
}

async function waitFor(fn, what, ms = 30000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { if (await fn()) return; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

const LONG = { timeout: 30000 };

test('console walk-through', { timeout: 300000 }, async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'chime-browser-'));
  tmpDirs.push(tmp);
  const port = await freePort();
  const exPort = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const admin = start('chime', ['admin', '--db', `sqlite://${tmp}/chime.db`, '--listen', `127.0.0.1:${port}`, '--default-tz', 'UTC', '--registry-refresh', '500ms'],
    { CHIME_ADMIN_PASSWORD: PASSWORD, CHIME_ACCESS_TOKEN: 'tok', RUST_LOG: 'warn' });
  await waitFor(async () => {
    assert.equal(admin.exitCode, null, 'chime admin exited');
    return (await fetch(`${base}/healthz`)).ok;
  }, 'the admin to listen', 60000);
  const executor = start('chime-demo-executor', ['--admin', base, '--appname', 'browser-demo', '--token', 'tok', '--listen', `127.0.0.1:${exPort}`, '--logdir', join(tmp, 'logs')], { RUST_LOG: 'warn' });

  const profile = mkdtempSync(join(tmpdir(), 'chime-chromium-'));
  tmpDirs.push(profile);
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    // Times on the page are in the browser's zone: make it UTC whatever the machine's is.
    timezoneId: 'UTC',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  browser.setDefaultTimeout(20000);
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    let promptAnswer;
    page.on('dialog', (d) => d.accept(d.type() === 'prompt' ? promptAnswer ?? d.defaultValue() : undefined));
    const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
    const noXss = async (where) => {
      assert.equal(await page.evaluate(() => window.__xss), undefined, `XSS payload ran on ${where}`);
      assert.equal(await page.locator('main img, main script, main svg').count(), 0, `markup from data on ${where}`);
    };
    const csrfFetch = (method, path, body) => page.evaluate(async ([m, p, b]) => {
      const me = await (await fetch('/console/api/me')).json();
      const r = await fetch(p, { method: m, headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': me.csrf_token }, body: b === undefined ? undefined : JSON.stringify(b) });
      return { status: r.status, body: await r.json().catch(() => null) };
    }, [method, path, body]);

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
    await shot('03-executors');

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
    await page.fill('#job-form input[name=time_zone]', 'Europe/Berlin');
    // Quarterly fires always cross a DST change within five; the preview flags it.
    await page.fill('#job-form input[name=schedule_expr]', '0 0 12 1 1/3 ?');
    await page.waitForFunction(() => document.querySelectorAll('#preview li').length === 5 && document.querySelector('#preview li .dst'), null, LONG);
    assert.equal(await page.$eval('#job-form input[name=schedule_expr]', (el) => el.validity.valid), true);
    await shot('04-job-form-dst');
    await page.fill('#job-form input[name=schedule_expr]', '0 0 3 * * ?');
    await page.waitForFunction(() => [...document.querySelectorAll('#preview li')].every((li) => li.textContent.includes('T03:00:00')), null, LONG);
    const first = await page.textContent('#preview li');
    assert.match(first, /T03:00:00\+0[12]:00/, 'preview is in the job zone');
    // A wrong zone marks the zone field (not the expression); fixing it clears the mark at once.
    await page.fill('#job-form input[name=time_zone]', 'Mars/Olympus');
    await page.waitForSelector('#preview-box .err');
    assert.equal(await page.$eval('#job-form input[name=time_zone]', (el) => el.validity.valid), false, 'the zone is marked');
    assert.equal(await page.$eval('#job-form input[name=schedule_expr]', (el) => el.validity.valid), true, 'the expression is not');
    await page.fill('#job-form input[name=time_zone]', 'Europe/Berlin');
    assert.equal(await page.$eval('#job-form input[name=time_zone]', (el) => el.validity.valid), true, 'a fixed zone blocks nothing');
    await page.waitForSelector('#preview li');
    // Owner and alarm e-mails; the server's complaint about a field is shown next to it.
    await page.fill('#job-form input[name=owner]', 'o'.repeat(70));
    await page.fill('#job-form input[name=alarm_contacts]', 'ops@example.com, dev@example.com');
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
    assert.deepEqual([job1.owner, job1.alarm_contacts], ['Ops team', 'ops@example.com, dev@example.com']);

    // Filters: by handler and by description.
    await page.fill('.filters input[name=handler]', 'demoJob');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 1);
    await page.fill('.filters input[name=handler]', '');
    await page.fill('.filters input[name=description]', 'glue');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 1 && document.querySelector('#jobs tbody tr[data-job="3"]'));
    await page.fill('.filters input[name=description]', '');
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 3);
    await shot('05-jobs');

    // Start and stop; copy.
    await page.click('#jobs tr[data-job="1"] button:has-text("Start")');
    await page.waitForSelector('#jobs tr[data-job="1"] button:has-text("Stop")');
    // A started job shows when it fires next (03:00 in Berlin, shown in the browser's zone: UTC).
    assert.match(await page.textContent('#jobs tr[data-job="1"] td.next-fire'), /^\d{4}-\d\d-\d\d 0[12]:00:00$/);
    await shot('05-jobs-started');
    await page.click('#jobs tr[data-job="1"] button:has-text("Stop")');
    await page.waitForSelector('#jobs tr[data-job="1"] button:has-text("Start")');
    assert.equal(await page.textContent('#jobs tr[data-job="1"] td.next-fire'), '');
    await page.click('#jobs tr[data-job="2"] button:has-text("Copy")');
    await page.waitForSelector('#job-form');
    assert.equal(await page.inputValue('#job-form input[name=description]'), 'hello job (copy)');
    await page.click('#job-form button[type=submit]');
    await page.waitForSelector('#jobs tbody tr[data-job="4"]');
    await page.click('#jobs tr[data-job="4"] button:has-text("Remove")');
    await page.waitForFunction(() => !document.querySelector('#jobs tbody tr[data-job="4"]'));

    // Script editor: save two versions, see highlighting, diff and restore.
    await page.click('#jobs tr[data-job="3"] button:has-text("Script")');
    await page.waitForSelector('textarea[name=glue_source]');
    await page.fill('textarea[name=glue_source]', '#!/bin/sh\n# greet\necho "hello"\n');
    await page.click('#save-script');
    await page.waitForSelector('#versions tr[data-version]');
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
    promptAnswer = '60';
    await page.click('#jobs tbody tr[data-job="1"] button:has-text("Run once")');
    await page.waitForSelector('#run-log');
    await page.waitForFunction(() => document.getElementById('run-log').textContent.includes('slept 1 s'), null, LONG);
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
    await page.click('#kill');
    await page.waitForFunction(() => document.getElementById('run-status').dataset.status === 'failed', null, LONG);
    await page.waitForSelector('#handle-msg:not(:empty)');
    await page.waitForSelector('#kill', { state: 'hidden' });
    await shot('09-run-killed');

    // Run the XSS-parameter job: its log, result and parameter show as text.
    await page.goto(`${base}/console/#jobs`);
    promptAnswer = XSS2;
    await page.click('#jobs tbody tr[data-job="2"] button:has-text("Run once")');
    await page.waitForFunction(() => document.getElementById('run-status')?.dataset.status === 'success', null, LONG);
    await page.waitForFunction((x) => document.getElementById('run-log').textContent.includes(`param=${x}`), XSS2, LONG);
    assert.equal(await page.textContent('#run-param'), XSS2);
    assert.equal(await page.isVisible('#kill'), false, 'no Kill on a finished run');
    await noXss('the run log');
    await page.goto(`${base}/console/#runs`);
    await page.waitForSelector('#runs tbody tr td.param');
    assert.ok((await page.locator('#runs td.param').allTextContents()).includes(XSS2));
    await noXss('runs');
    // Job 1 is job 2's child: its success started job 1 (trigger type "Parent job").
    await waitFor(async () => {
      await page.click('.filters button:has-text("Refresh")');
      return (await page.locator('#runs tbody td:has-text("Parent job")').count()) > 0;
    }, 'the child job to run', 60000);
    // Filter by status.
    await page.selectOption('.filters select[name=status]', 'failed');
    await page.waitForFunction(() => [...document.querySelectorAll('#runs tbody tr')].length === 1);
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
    assert.equal(await page.inputValue('.filters select[name=job_id]'), '2');
    assert.ok((await page.locator('#runs td.job').allTextContents()).every((x) => x === '#2 hello job'), 'only job 2');

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
    await shot('02-dashboard');

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
    await page.check('#user-form label:has-text("browser-demo") input');
    await page.uncheck('#user-form input[name=can_write]');
    await page.click('#user-form button[type=submit]');
    await page.waitForSelector('tr[data-user=carol] td:has-text("browser-demo")');
    // Dave may operate browser-demo's jobs.
    await page.click('#add-user');
    await page.fill('#user-form input[name=username]', 'dave');
    await page.fill('#user-form input[name=password]', 'dave-password');
    await page.check('#user-form label:has-text("browser-demo") input');
    await page.click('#user-form button[type=submit]');
    await page.waitForSelector('tr[data-user=dave] td:has-text("browser-demo")');
    await shot('11-users');
    await page.click('a[href="#audit"]');
    await page.waitForSelector('#audit td:has-text("PUT /v1/users/{id}")');
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
    assert.equal(await page.locator('#jobs button').count(), 0, 'read-only: no actions');
    await noXss('jobs as carol');
    await page.goto(`${base}/console/#executors`);
    await page.waitForSelector('#groups tr[data-app]');
    assert.deepEqual(await page.locator('#groups tr[data-app]').evaluateAll((r) => r.map((x) => x.dataset.app)), ['browser-demo']);
    assert.equal(await page.locator('a[href="#users"]').count(), 0, 'no user management for users');
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
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('#audit tbody tr')];
      return rows.length === 1 && rows[0].textContent.includes('PUT /v1/groups/{key}') && rows[0].textContent.includes('403');
    });
    await shot('18-audit-refused');
    await page.fill('.filters input[name=username]', '');
    await page.fill('.filters input[name=action]', '');
    await page.waitForFunction(() => document.querySelectorAll('#audit tbody tr').length > 10);
    const [docScroll, docClient] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(docScroll <= docClient, `audit details wrap: page ${docScroll} px wide in ${docClient}`);
    await page.fill('.filters input[name=from]', local(Date.now() + 3600000));
    await page.waitForFunction(() => document.querySelectorAll('#audit tbody tr').length === 0);
    assert.deepEqual(errors, [], 'no script errors');
  } catch (e) {
    // Keep what the page looked like when it failed, next to the other screenshots.
    for (const p of browser.pages()) await p.screenshot({ path: join(shots, 'failure.png'), fullPage: true }).catch(() => {});
    throw e;
  } finally {
    await browser.close();
  }
});
