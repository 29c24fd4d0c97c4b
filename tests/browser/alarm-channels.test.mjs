// Alarm channels in the web console, in headless Chromium (Debian's `chromium`, driven by
// playwright-core), against receivers on loopback: a "Slack" webhook that answers 200 `ok` and
// a "DingTalk" robot that refuses every message as DingTalk does a bad signature (errcode
// 310000). As the admin: the channel form shows the inputs of each kind; a Slack channel is
// created, listed with its URL cut after the host, and its test message is delivered; the
// DingTalk channel's test shows the robot's refusal as text; an edit that leaves the URL
// empty keeps it (the request carries no URL or secret, and the test still arrives); a
// channel used by a job cannot be deleted, an unused one can; a job's and a group's channels
// are set in their forms with the names suggested; and the page of a failed run of that job
// lists the delivery of its alarm; the audit log names what was done to which channel. Starts its own `chime admin` (temp SQLite) and demo
// executor, as console.test.mjs does.
//
// Needs: the `chime` and `chime-demo-executor` binaries and Chromium (see lib/harness.mjs).
// Every wait is on a condition, with generous limits for a slow, shared machine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import http from 'node:http';
import { atCleanUp, cleanUp, freePort, launchBrowser, logInAs, pageCall, shots, startAdmin, startBinary, tempDir, waitFor } from './lib/harness.mjs';

const PASSWORD = 'alarm-channels-pw';
const LONG = { timeout: 30000 };
// Markup in a receiver's answer: the console must show it as text, never run it.
const XSS = '<img src=x onerror="window.__xss=1">';

/**
 * A webhook receiver on loopback: records every request (method, path with query, body) and
 * answers each with `status` and `body`.
 * @returns {Promise<{url: string, got: Array<{method: string, path: string, body: string}>}>}
 */
function receiver(status, contentType, body) {
  const got = [];
  const server = http.createServer((req, res) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { data += c; });
    req.on('end', () => {
      got.push({ method: req.method, path: req.url, body: data });
      res.writeHead(status, { 'Content-Type': contentType });
      res.end(body);
    });
  });
  atCleanUp(() => server.close());
  return new Promise((res) => server.listen(0, '127.0.0.1', () => res({ url: `http://127.0.0.1:${server.address().port}`, got })));
}

/** @type {import('playwright-core').BrowserContext} */
let browser;
/** @type {import('playwright-core').Page} */
let page;
let base;
let slack;
let dingtalk;
const errors = [];

// A request with the session's CSRF token, from the page.
const call = (method, path, body) => pageCall(page, method, path, body);
const shot = (name) => page.screenshot({ path: join(shots, `alarm-channels-${name}.png`), fullPage: true });
// Opens a page of the console, drawn afresh.
const open = async (hash) => {
  await page.goto(`${base}/console/#${hash}`);
  await page.reload();
};
const row = (name) => `#channels tr[data-channel="${name}"]`;
// The inputs of the channel form the user sees, by name, in order.
const shownInputs = () => page.locator('#channel-form label:not([hidden]) :is(input, select, textarea)').evaluateAll((els) => els.map((e) => e.getAttribute('name')));
const noXss = async (where) => {
  assert.equal(await page.evaluate(() => window.__xss), undefined, `markup ran on ${where}`);
  assert.equal(await page.locator('main img, main script').count(), 0, `markup from data on ${where}`);
};

before(async () => {
  slack = await receiver(200, 'text/plain', 'ok');
  dingtalk = await receiver(200, 'application/json', JSON.stringify({ errcode: 310000, errmsg: `sign not match ${XSS}` }));
  const exPort = await freePort();
  base = await startAdmin(['--default-tz', 'UTC', '--registry-refresh', '500ms'], { CHIME_ADMIN_PASSWORD: PASSWORD, CHIME_ACCESS_TOKEN: 'tok' });
  startBinary('chime-demo-executor', ['--admin', base, '--appname', 'alarm-demo', '--token', 'tok', '--listen', `127.0.0.1:${exPort}`, '--logdir', join(tempDir('chime-alarm-channels-'), 'logs')], { RUST_LOG: 'warn' });
  browser = await launchBrowser();
  page = await browser.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => d.accept());
  await page.goto(`${base}/`);
  await page.selectOption('#login-lang', 'en');
  await logInAs(page, base, 'admin', PASSWORD);
  assert.equal((await call('POST', '/v1/groups', { app_name: 'alarm-demo' })).status, 201);
  await waitFor(async () => (await call('GET', '/v1/executors?group=alarm-demo')).body[0].executors.length > 0, 'the demo executor to register', 60000);
});

after(async () => {
  if (browser) {
    if (process.exitCode) for (const p of browser.pages()) await p.screenshot({ path: join(shots, 'alarm-channels-failure.png'), fullPage: true }).catch(() => {});
    await browser.close();
  }
  await cleanUp();
});

test('the channel form shows the inputs of the kind chosen, with where to get its webhook', async () => {
  await open('dashboard');
  await page.click('nav a[href="#channels"]');
  await page.waitForSelector('#no-channels');
  assert.equal(await page.textContent('nav a[href="#channels"]'), 'Alarm channels');
  await page.click('#add-channel');
  await page.waitForSelector('#channel-form');
  assert.equal(await page.inputValue('#channel-form select[name=kind]'), 'slack');
  assert.deepEqual(await shownInputs(), ['name', 'kind', 'url']);
  assert.match(await page.textContent('#chan-kind-hint'), /Incoming Webhooks/);
  /** @type {Array<[string, string[], RegExp]>} */
  const kinds = [
    ['email', ['name', 'kind', 'recipients'], /SMTP/],
    ['webhook', ['name', 'kind', 'url', 'secret', 'template'], /HMAC/],
    ['teams', ['name', 'kind', 'url'], /Post to a channel when a webhook request is received/],
    ['dingtalk', ['name', 'kind', 'url', 'secret'], /Custom robot.*加签/],
    ['feishu', ['name', 'kind', 'url', 'secret'], /Custom bot.*签名校验/],
    ['wecom', ['name', 'kind', 'url'], /Add group robot/],
  ];
  for (const [kind, inputs, hint] of kinds) {
    await page.selectOption('#channel-form select[name=kind]', kind);
    assert.deepEqual(await shownInputs(), inputs, `the inputs of ${kind}`);
    assert.match(await page.textContent('#chan-kind-hint'), hint, `the hint of ${kind}`);
  }
  await shot('form-wecom');
  // A name the admin refuses is reported next to the name.
  await page.selectOption('#channel-form select[name=kind]', 'slack');
  await page.fill('#channel-form input[name=name]', 'not a name');
  await page.fill('#channel-form input[name=url]', `${slack.url}/services/T0/B0/tokenAAA`);
  await page.click('#channel-form button[type=submit]');
  await page.waitForSelector('#channel-form label:has(input[name=name]) .field-err');
  assert.equal(await page.getAttribute('#channel-form input[name=name]', 'aria-invalid'), 'true');
  assert.equal(slack.got.length, 0);
});

test('a Slack channel: listed with its URL cut after the host, its test message delivered', async () => {
  await page.fill('#channel-form input[name=name]', 'ops-slack');
  await page.click('#channel-form button[type=submit]');
  await page.waitForSelector(row('ops-slack'));
  assert.equal(await page.textContent(`${row('ops-slack')} td.kind`), 'Slack');
  assert.equal(await page.textContent(`${row('ops-slack')} td.url`), `${slack.url}/…`, 'the URL up to the host');
  assert.equal(await page.textContent(`${row('ops-slack')} td.signed`), '');
  assert.doesNotMatch(await page.textContent('main'), /tokenAAA|services/, 'the webhook key is not on the page');
  await page.click(`${row('ops-slack')} button.test`);
  await page.waitForSelector(`${row('ops-slack')} .test-result[data-result=delivered]`, LONG);
  assert.equal(await page.textContent(`${row('ops-slack')} .test-result`), 'Delivered');
  assert.equal(slack.got.length, 1, 'the receiver got one message');
  assert.deepEqual([slack.got[0].method, slack.got[0].path], ['POST', '/services/T0/B0/tokenAAA']);
  assert.ok(JSON.parse(slack.got[0].body).text, 'a Slack message has its text');
  await shot('slack-delivered');
});

test("a DingTalk channel's test shows the robot's refusal as text", async () => {
  await page.click('#add-channel');
  await page.fill('#channel-form input[name=name]', 'ops-dingtalk');
  await page.selectOption('#channel-form select[name=kind]', 'dingtalk');
  await page.fill('#channel-form input[name=url]', `${dingtalk.url}/robot/send?access_token=tokenBBB`);
  await page.fill('#channel-form input[name=secret]', 'SECtest');
  await page.click('#channel-form button[type=submit]');
  await page.waitForSelector(row('ops-dingtalk'));
  assert.equal(await page.textContent(`${row('ops-dingtalk')} td.kind`), 'DingTalk');
  assert.equal(await page.textContent(`${row('ops-dingtalk')} td.url`), `${dingtalk.url}/…`);
  assert.equal(await page.textContent(`${row('ops-dingtalk')} td.signed`), 'signed');
  await page.click(`${row('ops-dingtalk')} button.test`);
  await page.waitForSelector(`${row('ops-dingtalk')} .test-result[data-result=failed]`, LONG);
  const refusal = await page.textContent(`${row('ops-dingtalk')} .test-result`);
  assert.match(refusal, /310000/);
  assert.equal(await page.getAttribute(`${row('ops-dingtalk')} .test-result`, 'class'), 'test-result err');
  assert.ok(dingtalk.got.length >= 1, 'the robot was asked');
  const asked = new URL(dingtalk.got[0].path, dingtalk.url);
  assert.equal(asked.searchParams.get('access_token'), 'tokenBBB');
  assert.ok(asked.searchParams.get('timestamp') && asked.searchParams.get('sign'), 'signed as DingTalk wants');
  await noXss('the channels page');
  await shot('dingtalk-refused');
});

test('an edit that leaves the URL empty keeps it', async () => {
  const sent = [];
  const listen = (req) => { if (req.method() === 'PUT' && req.url().includes('/v1/alarm-channels/')) sent.push(JSON.parse(req.postData() || 'null')); };
  page.on('request', listen);
  try {
    await page.click(`${row('ops-slack')} button.edit`);
    await page.waitForSelector('#channel-form');
    assert.equal(await page.inputValue('#channel-form input[name=url]'), '', 'the URL is not read into the form');
    assert.equal(await page.getAttribute('#channel-form input[name=url]', 'placeholder'), `${slack.url}/… (set — leave empty to keep)`);
    assert.equal(await page.inputValue('#channel-form input[name=name]'), 'ops-slack');
    await page.fill('#channel-form input[name=name]', 'ops-slack-2');
    await shot('edit');
    await page.click('#channel-form button[type=submit]');
    await page.waitForSelector(row('ops-slack-2'));
  } finally {
    page.off('request', listen);
  }
  assert.deepEqual(sent, [{ name: 'ops-slack-2', kind: 'slack' }], 'no url or secret in the request');
  assert.equal(await page.locator(row('ops-slack')).count(), 0);
  assert.equal(await page.textContent(`${row('ops-slack-2')} td.url`), `${slack.url}/…`);
  await page.click(`${row('ops-slack-2')} button.test`);
  await page.waitForSelector(`${row('ops-slack-2')} .test-result[data-result=delivered]`, LONG);
  assert.equal(slack.got.length, 2);
  assert.equal(slack.got[1].path, '/services/T0/B0/tokenAAA', 'the stored URL was kept');
  // The DingTalk channel's edit form says its secret is set, and offers to remove it.
  await page.click(`${row('ops-dingtalk')} button.edit`);
  await page.waitForSelector('#channel-form');
  assert.equal(await page.getAttribute('#channel-form input[name=secret]', 'placeholder'), '(set — leave empty to keep)');
  assert.deepEqual(await shownInputs(), ['name', 'kind', 'url', 'secret', 'clear_secret']);
  await page.click('#channel-form button:has-text("Cancel")');
  assert.equal(await page.locator('#channel-form').count(), 0);
});

test("a job's and a group's channels are set in their forms, the names suggested", async () => {
  await open('jobs/new');
  await page.waitForSelector('#job-form');
  await page.selectOption('#job-form select[name=group_id]', { label: 'alarm-demo' });
  await page.fill('#job-form input[name=description]', 'fails with alarm');
  await page.selectOption('#job-form select[name=schedule_type]', 'NONE');
  await page.fill('#job-form input[name=handler]', 'failJobHandler');
  assert.equal(await page.getAttribute('#job-form input[name=alarm_channels]', 'list'), 'channel-names');
  await page.fill('#job-form input[name=alarm_channels]', 'ops');
  await page.waitForFunction(() => [...document.querySelectorAll('#channel-names option')].map((o) => o.value).join() === 'ops-dingtalk,ops-slack-2');
  await page.fill('#job-form input[name=alarm_channels]', 'ops-dingtalk, ');
  await page.waitForFunction(() => [...document.querySelectorAll('#channel-names option')].map((o) => o.value).join() === 'ops-dingtalk, ops-slack-2');
  // A name that is no channel is refused next to the field.
  await page.fill('#job-form input[name=alarm_channels]', 'no-such-channel');
  await page.click('#job-form button[type=submit]');
  await page.waitForSelector('#job-form label:has(input[name=alarm_channels]) .field-err');
  await shot('job-form-unknown-channel');
  // No section of schema-only fields: the table names alarm_channels.
  assert.equal(await page.locator('#job-form fieldset.sec[data-section=other]').count(), 0);
  await page.fill('#job-form input[name=alarm_channels]', 'ops-slack-2');
  // Its alarms in Chinese: one of the languages offered, the admin's by default.
  assert.equal(await page.inputValue('#job-form select[name=alarm_language]'), '');
  await page.selectOption('#job-form select[name=alarm_language]', 'zh');
  await page.click('#job-form button[type=submit]');
  await page.waitForSelector('#jobs tbody tr');
  const jobs = (await call('GET', '/v1/jobs')).body;
  const job = jobs.find((j) => j.description === 'fails with alarm');
  assert.ok(job, 'the job was saved');
  const saved = (await call('GET', `/v1/jobs/${job.id}`)).body;
  assert.equal(saved.alarm_channels, 'ops-slack-2');
  assert.equal(saved.alarm_language, 'zh');
  // Edited, the form shows the job's channels.
  await open(`jobs/edit/${job.id}`);
  await page.waitForSelector('#job-form');
  assert.equal(await page.inputValue('#job-form input[name=alarm_channels]'), 'ops-slack-2');
  // The group's channels, for its jobs that name none.
  await open('executors');
  await page.click('tr[data-app="alarm-demo"] button:has-text("Edit")');
  await page.fill('#group-form input[name=alarm_channels]', 'ops');
  await page.waitForFunction(() => document.querySelectorAll('#channel-names option').length === 2);
  await page.fill('#group-form input[name=alarm_channels]', 'ops-slack-2');
  await page.click('#group-form button[type=submit]');
  await page.waitForFunction(() => !document.getElementById('group-form'));
  const group = (await call('GET', '/v1/groups')).body.find((g) => g.app_name === 'alarm-demo');
  assert.equal(group.alarm_channels, 'ops-slack-2');
  // The list shows the group's channels.
  await page.waitForFunction(() => document.querySelector('tr[data-app="alarm-demo"] td.alarm-channels')?.textContent === 'ops-slack-2');
});

test("a failed run's page lists the deliveries of its alarm", async () => {
  const job = (await call('GET', '/v1/jobs')).body.find((j) => j.description === 'fails with alarm');
  const before = slack.got.length;
  const fired = await call('POST', `/v1/jobs/${job.id}/trigger`, { param: 'on purpose' });
  assert.equal(fired.status, 202);
  await open(`runs/${fired.body.run_id}`);
  await page.waitForSelector('#run-alarms tbody tr[data-channel="ops-slack-2"][data-state=sent]', LONG);
  const cells = await page.locator('#run-alarms tbody tr[data-channel="ops-slack-2"] td').allTextContents();
  assert.deepEqual(cells.slice(0, 5), ['ops-slack-2', 'Slack', 'sent', '1', '']);
  assert.match(cells[5], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d /, 'when it was delivered');
  assert.equal(await page.getAttribute('#run-alarm', 'data-alarm'), 'sent');
  assert.equal(slack.got.length, before + 1, 'the receiver got the alarm');
  assert.match(slack.got[slack.got.length - 1].body, /Chime 告警/, "in the job's language");
  await shot('run-deliveries');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => document.querySelector('#run-alarms tbody tr td.state')?.textContent === '已发送');
  await shot('run-deliveries-zh');
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => document.querySelector('#run-alarms tbody tr td.state')?.textContent === 'sent');
});

test('a channel a job uses cannot be deleted; an unused one can', async () => {
  await open('channels');
  await page.click(`${row('ops-slack-2')} button.remove`);
  await page.waitForSelector('main p.err');
  assert.ok(await page.locator(row('ops-slack-2')).count(), 'still listed');
  await page.click(`${row('ops-dingtalk')} button.remove`);
  await page.waitForFunction(() => !document.querySelector('#channels tr[data-channel="ops-dingtalk"]'));
  assert.deepEqual((await call('GET', '/v1/alarm-channels')).body.map((c) => c.name), ['ops-slack-2']);
  // In Chinese too.
  await page.selectOption('#lang', 'zh');
  await page.waitForSelector('main h2:has-text("告警渠道")');
  assert.equal(await page.textContent(`${row('ops-slack-2')} button.test`), '发送测试');
  await shot('list-zh');
  await page.selectOption('#lang', 'en');
  await page.waitForSelector('main h2:has-text("Alarm channels")');
});

test('the audit log names channel changes and test messages, without secrets or URL keys', async () => {
  await open('audit');
  await page.fill('.filters input[name=action]', 'alarm channel');
  await page.waitForFunction(() => [...document.querySelectorAll('#audit tbody tr')].some((r) => r.querySelector('td.action').textContent === 'Send test'
    && /^Alarm channel #\d+$/.test(r.querySelector('td.target').textContent)));
  const targets = await page.locator('#audit tbody tr td.target').allTextContents();
  assert.ok(targets.includes('Alarm channel “ops-dingtalk”'), `the creation names the channel: ${targets}`);
  assert.doesNotMatch(await page.textContent('main'), /SECtest|tokenAAA|tokenBBB/, 'no secret or URL key in the audit log');
  await shot('audit');
  await noXss('the audit page');
  assert.deepEqual(errors, [], 'no script errors');
});
