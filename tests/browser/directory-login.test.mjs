// Logging in to the console through an LDAP directory, in headless Chromium (Debian's
// `chromium`, driven by playwright-core), against a real OpenLDAP server (Debian's `slapd`,
// started here on loopback with a temporary database). Alice is in the directory group
// billing-ops, which `--sso-roles` maps to operator of the executor group billing: she logs in
// with her directory password and lands as an operator there (runs the job, cannot edit it);
// a wrong password is refused on the login form; with local logins for administrators only, a
// local user is refused with the reason, and the local administrator (break-glass) gets in.
//
// Needs: the `chime` binary and Chromium (see lib/harness.mjs), slapd and ldap-utils
// (scripts/test installs them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import { callApi, cleanUp, freePort, launchBrowser, loginPage, shots, startAdmin, startChild, tempDir, waitFor } from './lib/harness.mjs';

const PASSWORD = 'directory-login-pw';
const TOKEN = 'directory-login-token';
const SUFFIX = 'dc=example,dc=org';
const MANAGER = `cn=admin,${SUFFIX}`;
const MANAGER_PW = 'manager-secret';

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
  startChild(bin, ['-f', join(dir, 'slapd.conf'), '-h', `${url}/`, '-d', '0']);
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
const api = (method, path, body) => callApi(base, TOKEN, method, path, body);
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
  const ldap = join(tempDir('chime-directory-'), 'ldap');
  mkdirSync(ldap);
  const ldapUrl = await startDirectory(ldap, await freePort());
  base = await startAdmin(['--default-tz', 'UTC',
    '--ldap-url', ldapUrl, '--ldap-bind-dn', MANAGER, '--ldap-user-base', `ou=people,${SUFFIX}`, '--ldap-group-base', `ou=groups,${SUFFIX}`,
    '--sso-roles', 'billing-ops => billing:operator', '--local-login', 'admins'],
  { CHIME_ADMIN_PASSWORD: PASSWORD, CHIME_API_TOKEN: TOKEN, CHIME_LDAP_BIND_PASSWORD: MANAGER_PW });
  const group = await api('POST', '/v1/groups', { app_name: 'billing' });
  assert.equal(group.status, 201);
  const job = await api('POST', '/v1/jobs', { group_id: group.body.id, description: 'monthly invoices', handler: 'invoices', schedule_type: 'NONE' });
  assert.equal(job.status, 201);
  const local = await api('POST', '/v1/users', { username: 'dana', password: 'dana-local-pw', group_ids: [group.body.id] });
  assert.equal(local.status, 201);
  browser = await launchBrowser();
  page = await loginPage(browser, base, errors);
});

after(async () => {
  if (browser) await browser.close();
  await cleanUp();
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
