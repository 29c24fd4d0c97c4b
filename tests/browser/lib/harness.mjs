// What the browser tests share: where the `chime` binaries and screenshots are, child processes
// that never outlive the test (killed on exit and on SIGINT/SIGTERM), temporary directories
// removed at the end, free loopback ports, waiting for a condition, and headless Chromium.
//
// Environment: CHIME_BIN_DIR (directory with `chime`, default $CARGO_TARGET_DIR/debug or
// target/debug), CHIME_SCREENSHOTS, CHROMIUM (default /usr/bin/chromium).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { chromium } from 'playwright-core';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** The directory holding the `chime` binary. */
export const binDir = process.env.CHIME_BIN_DIR || join(process.env.CARGO_TARGET_DIR || join(repo, 'target'), 'debug');
/** Where screenshots go. */
export const shots = process.env.CHIME_SCREENSHOTS || join(repo, 'target', 'browser-screenshots');
mkdirSync(shots, { recursive: true });

const children = [];
const cleanups = [];
const running = (c) => c.exitCode === null && c.signalCode === null;
const killChildren = () => { for (const c of children) if (running(c)) c.kill('SIGKILL'); };
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => { killChildren(); process.exit(130); });
process.once('exit', killChildren);

/** Starts a process that dies with the test; its output goes to the test's. */
export function startChild(bin, args, env) {
  const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  child.on('error', (e) => { console.error(`${bin}: ${e.message}`); });
  children.push(child);
  return child;
}

/** Starts one of Chime's binaries (`chime`, `chime-demo-executor`) as `startChild` does. */
export function startBinary(name, args, env) {
  return startChild(join(binDir, name), args, env);
}

/** A temporary directory, removed by `cleanUp`. */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs `fn` in `cleanUp` (a server to close). */
export function atCleanUp(fn) { cleanups.push(fn); }

/**
 * Stops the children, newest first (an executor says goodbye while its admin still listens),
 * each given 5 s after SIGTERM before it is killed; then removes the temporary directories.
 */
export async function cleanUp() {
  for (const c of [...children].reverse()) {
    if (running(c)) c.kill('SIGTERM');
    const end = Date.now() + 5000;
    while (running(c) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    if (running(c)) { console.error(`# ${c.spawnfile} did not stop on SIGTERM; killing it`); c.kill('SIGKILL'); }
  }
  for (const fn of cleanups.splice(0)) fn();
}

/** A loopback port free at the moment. */
export function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
}

/** Waits until `fn` answers true (errors count as not yet), or fails naming `what`. */
export async function waitFor(fn, what, ms = 30000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { if (await fn()) return; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

/**
 * Starts `chime admin` on a free port with a new SQLite database, `args` after the database
 * and listen flags, `env` added; answers its base URL once /healthz answers.
 */
export async function startAdmin(args, env, port) {
  const dir = tempDir('chime-admin-');
  const listen = port || await freePort();
  const base = `http://127.0.0.1:${listen}`;
  const admin = startBinary('chime', ['admin', '--db', `sqlite://${dir}/chime.db`, '--listen', `127.0.0.1:${listen}`, ...args],
    { RUST_LOG: 'warn', ...env });
  await waitFor(async () => {
    if (!running(admin)) throw new Error('chime admin exited');
    return (await fetch(`${base}/healthz`)).ok;
  }, 'the admin to listen', 60000);
  return base;
}

/** Headless Chromium with a profile of its own; closed by the caller. */
export async function launchBrowser() {
  const browser = await chromium.launchPersistentContext(tempDir('chime-chromium-'), {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    timezoneId: 'UTC',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  browser.setDefaultTimeout(20000);
  return browser;
}

/** Calls the REST API at `base` with the bearer `token`; answers the status and the JSON body. */
export async function callApi(base, token, method, path, body) {
  const r = await fetch(`${base}${path}`, { method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json().catch(() => null) };
}

/** A request from the page, with its session's CSRF token; answers the status and the JSON body. */
export function pageCall(page, method, path, body) {
  return page.evaluate(async ([m, p, b]) => {
    const me = await (await fetch('/console/api/me')).json();
    const r = await fetch(p, { method: m, headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': me.csrf_token }, body: b === undefined ? undefined : JSON.stringify(b) });
    return { status: r.status, body: await r.json().catch(() => null) };
  }, [method, path, body]);
}

/** Logs in on the login form as `user`, and waits for the dashboard. */
export async function logInAs(page, base, user, password) {
  await page.goto(`${base}/`);
  await page.fill('input[name=username]', user);
  await page.fill('input[name=password]', password);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('[data-stat=jobs]');
}

/** The browser's page on the console's login form in English, its script errors kept in `errors`. */
export async function loginPage(browser, base, errors) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/`);
  await page.selectOption('#login-lang', 'en');
  return page;
}
