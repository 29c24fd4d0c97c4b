// Logging in to the console through an OpenID Connect provider, in headless Chromium (Debian's
// `chromium`, driven by playwright-core), against a certified provider implementation (the npm
// package `oidc-provider`, started here on loopback, its own login and consent pages). Alice's
// groups claim holds billing-ops, which `--sso-roles` maps to operator of the executor group
// billing: she clicks "Sign in with corp", signs in at the provider and lands as an operator;
// the provider's answer cannot be used twice; logging out signs her out at the provider too;
// bob (chime-admins) lands as an administrator and sees alice as a provider user. The tokens no
// correct provider issues (another key, expired, another audience) are refused in the Rust test
// `crates/chime-admin/tests/oidc_login.rs`.
//
// Needs: the `chime` binary and Chromium (see lib/harness.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { atCleanUp, callApi, cleanUp, freePort, launchBrowser, loginPage, shots, startAdmin } from './lib/harness.mjs';

const PASSWORD = 'oidc-login-pw';
const TOKEN = 'oidc-login-token';
const CLIENT_SECRET = 'chime-oidc-client-secret';
/** The provider's users and their groups claim. */
const ACCOUNTS = { alice: ['billing-ops', 'unrelated'], bob: ['chime-admins'] };

/** Starts the provider on `port`, with Chime at `chime` as its one client. */
async function startProvider(port, chime) {
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'chime',
      client_secret: CLIENT_SECRET,
      redirect_uris: [`${chime}/console/oidc/corp/callback`],
      post_logout_redirect_uris: [`${chime}/console/`],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    claims: { openid: ['sub'], profile: ['preferred_username', 'name'], groups: ['groups'] },
    scopes: ['openid', 'profile', 'groups'],
    findAccount: async (_ctx, id) => ACCOUNTS[id] && {
      accountId: id,
      claims: async () => ({ sub: id, preferred_username: id, name: id, groups: ACCOUNTS[id] }),
    },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    cookies: { keys: ['oidc-login-test-cookie-key'] },
  });
  // The development login page takes any password; the account must exist in ACCOUNTS.
  await new Promise((res) => { const server = provider.listen(port, '127.0.0.1', res); atCleanUp(() => server.close()); });
  return issuer;
}

let base;
let browser;
let page;
const errors = [];
const shot = (name) => page.screenshot({ path: join(shots, `oidc-${name}.png`), fullPage: true });
const api = (method, path, body) => callApi(base, TOKEN, method, path, body);
/** Clicks "Sign in with corp" and signs in at the provider as `user`. */
const signInAtProvider = async (user) => {
  await page.goto(`${base}/`);
  await page.click('#sso-corp');
  await page.waitForSelector('input[name=login]');
  await page.fill('input[name=login]', user);
  await page.fill('input[name=password]', 'any');
  await page.click('button.login-submit');
  // The consent page, the first time this user meets the client.
  const consent = page.locator('input[name=prompt][value=consent]');
  if (await consent.count().catch(() => 0)) await page.click('button.login-submit');
};

before(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const issuer = await startProvider(await freePort(), base);
  await startAdmin(['--default-tz', 'UTC', '--public-url', base,
    '--sso-roles', 'billing-ops => billing:operator; chime-admins => admin', '--local-login', 'admins'],
  { CHIME_ADMIN_PASSWORD: PASSWORD, CHIME_API_TOKEN: TOKEN,
    CHIME_OIDC: `corp issuer=${issuer} client_id=chime client_secret=${CLIENT_SECRET} scopes=openid,profile,groups` }, port);
  const group = await api('POST', '/v1/groups', { app_name: 'billing' });
  assert.equal(group.status, 201);
  const job = await api('POST', '/v1/jobs', { group_id: group.body.id, description: 'monthly invoices', handler: 'invoices', schedule_type: 'NONE' });
  assert.equal(job.status, 201);
  browser = await launchBrowser();
  page = await loginPage(browser, base, errors);
});

after(async () => {
  if (browser) await browser.close();
  await cleanUp();
});

let callbackUrl;

test('alice signs in through the provider and lands as an operator of billing', async () => {
  page.on('request', (r) => { if (r.url().includes('/console/oidc/corp/callback')) callbackUrl = r.url(); });
  await page.goto(`${base}/`);
  await page.waitForSelector('#sso-corp:has-text("Sign in with corp")');
  await shot('login-page');
  await signInAtProvider('alice');
  await page.waitForSelector('[data-stat=jobs]');
  assert.equal(await page.textContent('#who'), 'alice (User)');
  assert.equal(await page.locator('a[href="#users"]').count(), 0, 'not an administrator');
  await page.click('a[href="#jobs"]');
  await page.waitForSelector('#jobs tbody tr td.desc:has-text("monthly invoices")');
  await page.click('#jobs tbody tr details.menu summary');
  const actions = await page.locator('#jobs tbody tr details.menu button').evaluateAll((b) => b.map((x) => x.dataset.action));
  assert.ok(actions.includes('run_once'), `an operator runs jobs: ${actions}`);
  assert.ok(!actions.includes('edit'), `an operator does not edit them: ${actions}`);
  await shot('alice-operator');
  const me = await page.evaluate(async () => (await fetch('/console/api/me')).json());
  assert.deepEqual(me.group_roles.map((g) => g.role), ['operator']);
  assert.ok(callbackUrl && callbackUrl.includes('state='), `the provider sent the browser back: ${callbackUrl}`);
});

test("the provider's answer cannot be used a second time", async () => {
  const r = await page.goto(callbackUrl);
  assert.equal(r.status(), 400);
  await page.waitForSelector('#login-error:has-text("used already")');
  await shot('replayed');
});

test('logging out signs alice out at the provider too, and back to the login page', async () => {
  await page.goto(`${base}/`);
  await page.waitForSelector('#logout');
  await page.click('#logout');
  // The provider asks whether to sign out there as well.
  await page.waitForSelector('button[name=logout][value=yes]');
  await page.click('button[name=logout][value=yes]');
  await page.waitForSelector('#login');
  assert.ok(page.url().startsWith(`${base}/console/`), page.url());
  const me = await page.evaluate(async () => (await fetch('/console/api/me')).status);
  assert.equal(me, 401, 'the Chime session is closed');
});

test('bob signs in as an administrator and sees alice as a provider user', async () => {
  await signInAtProvider('bob');
  await page.waitForSelector('[data-stat=jobs]');
  assert.match(await page.textContent('#who'), /^bob \(/);
  await page.click('a[href="#users"]');
  await page.waitForSelector('tr[data-user=alice] td:has-text("billing (operator)")');
  await shot('users');
  const users = await api('GET', '/v1/users');
  const alice = users.body.find((u) => u.username === 'alice');
  assert.equal(alice.source, 'oidc:corp');
  assert.deepEqual(errors, [], 'no script errors');
});
