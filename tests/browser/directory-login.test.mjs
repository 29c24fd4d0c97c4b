// Logging in to the console through an LDAP directory, in headless Chromium (Debian's
// `chromium`, driven by playwright-core), against a real OpenLDAP server (Debian's `slapd`,
// started here on loopback with a temporary database). Alice is in the directory group
// billing-ops, which `--sso-roles` maps to operator of the executor group billing: she logs in
// with her directory password and lands as an operator there (runs the job, cannot edit it);
// a wrong password is refused on the login form; with local logins for administrators only, a
// local user is refused with the reason, and the local administrator (break-glass) gets in.
//
// Needs: CHIME_BIN_DIR (directory with `chime`, default $CARGO_TARGET_DIR/debug or
// target/debug), CHROMIUM (default /usr/bin/chromium), slapd and ldap-utils (scripts/test
// installs them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
const PASSWORD = 'directory-login-pw';
const TOKEN = 'directory-login-token';
const SUFFIX = 'dc=example,dc=org';
const MANAGER = `cn=admin,${SUFFIX}`;
const MANAGER_PW = 'manager-secret';

const children = [];
const tmpDirs = [];
const running = (c) => c.exitCode === null && c.signalCode === null;
const stopChildren = () => { for (const c of children) if (running(c)) c.kill('SIGKILL'); };
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => { stopChildren(); process.exit(130); });
process.once('exit', stopChildren);

function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
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

/** Starts slapd on `port` with a database in `dir`; fills it over LDAP. */
async function startDirectory(dir, port) {
  mkdirSync(join(dir, 'db'));
  writeFileSync(join(dir, 'slapd.conf'), [
    'include /etc/ldap/schema/core.schema', 'include /etc/ldap/schema/cosine.schema',
    'include /etc/ldap/schema/inetorgperson.schema', 'include /etc/ldap/schema/nis.schema',
    'modulepath /usr/lib/ldap', 'moduleload back_mdb', 'moduleload memberof',
    `pidfile ${dir}/slapd.pid`, 'database mdb', `suffix "${SUFFIX}"`, `rootdn "${MANAGER}"`, `rootpw ${MANAGER_PW}`,
    `directory ${dir}/db`, 'maxsize 10485760', 'overlay memberof', '',
  ].join('\n'));
  const bin = ['/usr/sbin/slapd', '/usr/local/sbin/slapd'].find((p) => existsSync(p)) || 'slapd';
  const url = `ldap://127.0.0.1:${port}`;
  const slapd = spawn(bin, ['-f', join(dir, 'slapd.conf'), '-h', `${url}/`, '-d', '0'], { stdio: 'ignore' });
  children.push(slapd);
  await waitFor(() => new Promise((res) => {
    const s = net.connect(port, '127.0.0.1', () => { s.end(); res(true); });
    s.on('error', () => res(false));
  }), 'slapd to listen');
  const person = (uid, pw) => `dn: uid=${uid},ou=people,${SUFFIX}\nobjectClass: inetOrgPerson\nuid: ${uid}\ncn: ${uid}\nsn: ${uid}\nuserPassword: ${pw}\n`;
  const ldif = [
    `dn: ${SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n`,
    `dn: ou=people,${SUFFIX}\nobjectClass: organizationalUnit\nou: people\n`,
    `dn: ou=groups,${SUFFIX}\nobjectClass: organizationalUnit\nou: groups\n`,
    person('alice', 'alice-directory-pw'),
    `dn: cn=billing-ops,ou=groups,${SUFFIX}\nobjectClass: groupOfNames\ncn: billing-ops\nmember: uid=alice,ou=people,${SUFFIX}\n`,
  ].join('\n');
  const add = spawnSync('ldapadd', ['-x', '-D', MANAGER, '-w', MANAGER_PW, '-H', url], { input: ldif });
  assert.equal(add.status, 0, `ldapadd: ${add.stderr}`);
  return url;
}

let base;
let browser;
let page;
const errors = [];
const shot = (name) => page.screenshot({ path: join(shots, `directory-${name}.png`), fullPage: true });
const api = async (method, path, body) => {
  const r = await fetch(`${base}${path}`, { method, headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json().catch(() => null) };
};
const logIn = async (user, password) => {
  await page.goto(`${base}/`);
  await page.waitForSelector('#login');
  await page.fill('input[name=username]', user);
  await page.fill('input[name=password]', password);
  await page.click('#login button[type=submit]');
};
const logOut = async () => {
  await page.click('#logout');
  await page.waitForSelector('#login');
};

before(async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'chime-directory-'));
  tmpDirs.push(tmp);
  mkdirSync(join(tmp, 'ldap'));
  const ldapUrl = await startDirectory(join(tmp, 'ldap'), await freePort());
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const admin = spawn(join(binDir, 'chime'), ['admin', '--db', `sqlite://${tmp}/chime.db`, '--listen', `127.0.0.1:${port}`, '--default-tz', 'UTC',
    '--ldap-url', ldapUrl, '--ldap-bind-dn', MANAGER, '--ldap-user-base', `ou=people,${SUFFIX}`, '--ldap-group-base', `ou=groups,${SUFFIX}`,
    '--sso-roles', 'billing-ops => billing:operator', '--local-login', 'admins'],
  { env: { ...process.env, CHIME_ADMIN_PASSWORD: PASSWORD, CHIME_API_TOKEN: TOKEN, CHIME_LDAP_BIND_PASSWORD: MANAGER_PW, RUST_LOG: 'warn' }, stdio: ['ignore', 'inherit', 'inherit'] });
  children.push(admin);
  await waitFor(async () => {
    assert.equal(admin.exitCode, null, 'chime admin exited');
    return (await fetch(`${base}/healthz`)).ok;
  }, 'the admin to listen', 60000);
  const group = await api('POST', '/v1/groups', { app_name: 'billing' });
  assert.equal(group.status, 201);
  const job = await api('POST', '/v1/jobs', { group_id: group.body.id, description: 'monthly invoices', handler: 'invoices', schedule_type: 'NONE' });
  assert.equal(job.status, 201);
  const local = await api('POST', '/v1/users', { username: 'dana', password: 'dana-local-pw', group_ids: [group.body.id] });
  assert.equal(local.status, 201);
  const profile = mkdtempSync(join(tmpdir(), 'chime-chromium-'));
  tmpDirs.push(profile);
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    timezoneId: 'UTC',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  browser.setDefaultTimeout(20000);
  page = await browser.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/`);
  await page.selectOption('#login-lang', 'en');
});

after(async () => {
  if (browser) await browser.close();
  stopChildren();
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});

test('a wrong directory password is refused on the login form', async () => {
  await logIn('alice', 'not-her-password');
  await page.waitForSelector('#login-error:has-text("wrong user name or password")');
});

test('alice logs in with her directory password and lands as an operator of billing', async () => {
  await logIn('alice', 'alice-directory-pw');
  await page.waitForSelector('[data-stat=jobs]');
  assert.equal(await page.textContent('#who'), 'alice (User)');
  assert.equal(await page.locator('a[href="#users"]').count(), 0, 'not an administrator');
  await page.click('a[href="#jobs"]');
  await page.waitForSelector('#jobs tbody tr td.desc:has-text("monthly invoices")');
  await page.click('#jobs tbody tr details.menu summary');
  const actions = await page.locator('#jobs tbody tr details.menu button').evaluateAll((b) => b.map((x) => x.dataset.action));
  assert.ok(actions.includes('run_once'), `an operator runs jobs: ${actions}`);
  assert.ok(!actions.includes('edit') && !actions.includes('remove'), `an operator does not edit them: ${actions}`);
  assert.equal(await page.locator('#new-job').count(), 0, 'no Add for an operator');
  await shot('alice-operator');
  const me = await page.evaluate(async () => (await fetch('/console/api/me')).json());
  assert.deepEqual(me.group_roles.map((g) => g.role), ['operator']);
  await logOut();
});

test('with local login for administrators only, a local user is told why and the admin gets in', async () => {
  await logIn('dana', 'dana-local-pw');
  await page.waitForSelector('#login-error:has-text("administrators only")');
  await shot('local-user-refused');
  await logIn('admin', PASSWORD);
  await page.waitForSelector('[data-stat=jobs]');
  assert.match(await page.textContent('#who'), /^admin \(/);
  // The administrator sees alice as a directory user with her mapped role.
  await page.click('a[href="#users"]');
  await page.waitForSelector('tr[data-user=alice] td:has-text("billing (operator)")');
  await shot('users');
  assert.deepEqual(errors, [], 'no script errors');
});
