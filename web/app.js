// Chime console: a small single-page app without a build step. Every piece of data reaches the
// page through textContent / attributes set by `h` (never as HTML), so a job description such
// as <img onerror=…> is shown as text. The server's CSP forbids inline script as a second wall.
import { t, getLang, setLang } from './i18n.js';
import { pages } from './pages.js';
import { workflowPages } from './workflows.js';

export const state = { me: null, options: null };

/** The values of every job and run enum, from the admin (`/v1/options`), asked once per login. */
export async function options() {
  if (!state.options) state.options = await api('GET', '/v1/options');
  return state.options;
}

/** Creates an element: h('td', {class: 'x', onclick: f}, 'text', child, …). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Calls the API; state changes carry the session's CSRF token. Throws {status, error, field}. */
export async function api(method, path, body) {
  const headers = { 'Accept': 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && state.me && state.me.csrf_token) headers['X-CSRF-Token'] = state.me.csrf_token;
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  // A request still on its way when the session ended (a page's refresh after a logout) finds
  // the login form shown already: drawing it again would wipe what the user is typing.
  if (r.status === 401 && path !== '/console/api/login') { state.me = null; if (!document.getElementById('login')) showLogin(); }
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) throw Object.assign(new Error((data && data.error) || r.statusText), { status: r.status, field: data && data.field });
  return data;
}

/**
 * Which zone times are shown in: `job` (each job's own zone, the default), `browser` or `utc`.
 * Kept in the browser like the language.
 */
export const ZONE_MODES = ['job', 'browser', 'utc'];
let zoneMode = ZONE_MODES.includes(localStorage.getItem('chime.tz')) ? localStorage.getItem('chime.tz') : 'job';
export function getZoneMode() { return zoneMode; }
export function setZoneMode(m) { zoneMode = ZONE_MODES.includes(m) ? m : 'job'; localStorage.setItem('chime.tz', zoneMode); }
const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** The zone a time of a job in `jobZone` is shown in, under the current mode. */
export function shownZone(jobZone) {
  if (zoneMode === 'utc') return 'UTC';
  if (zoneMode === 'job' && jobZone) return jobZone;
  return browserZone();
}

const formats = new Map();
/**
 * Epoch ms as `YYYY-MM-DD HH:MM:SS Zone`, the console's one date format: in the job's zone
 * (`jobZone`, when the console shows job zones), the browser's zone or UTC. Times that belong
 * to no job (heartbeats, audit) use the browser's zone in job mode.
 */
export function fmtTime(ms, jobZone) {
  if (!ms) return '';
  let zone = shownZone(jobZone);
  let f = formats.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    } catch {
      // A zone this browser does not know: UTC, named as such, rather than a wrong local time.
      zone = 'UTC';
      f = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    }
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${zone}`;
}

/** The form label of an API field (`schedule_expr` → "Schedule expression"), else the name. */
export function fieldLabel(field) {
  const name = String(field).split(/[.[]/)[0];
  return t(name) === name ? field : t(name);
}

export function errorBox(e) { return h('p', { class: 'err', role: 'alert' }, e.field ? `${fieldLabel(e.field)}: ${e.message}` : e.message); }

/** Removes the field errors shown in `form` (of the field `name` only, when given). */
export function clearErrors(form, name) {
  for (const el of form.querySelectorAll('.field-err')) if (!name || el.dataset.field === name) el.remove();
  for (const el of form.querySelectorAll('[aria-invalid]')) if (!name || el.name === name) el.removeAttribute('aria-invalid');
}

/**
 * Shows an API error next to the form field it names (`time_zone`, `child_job_ids[0]`…), or in
 * `box` when the form has no such visible field. Earlier errors go first; each error goes as
 * soon as its field is edited, so a fixed field never keeps an old complaint.
 */
export function showError(form, box, e) {
  clearErrors(form);
  box.replaceChildren();
  const name = e.field ? String(e.field).split(/[.[]/)[0] : '';
  const input = name ? [...form.elements].find((el) => el.name === name) : null;
  const label = input && input.closest('label');
  if (!label || label.closest('[hidden]')) { box.replaceChildren(errorBox(e)); return; }
  input.setAttribute('aria-invalid', 'true');
  label.append(h('span', { class: 'field-err err', role: 'alert', 'data-field': name }, e.message));
  input.addEventListener('input', () => clearErrors(form, name), { once: true });
  input.focus();
}

/** The language selector (top bar and login page): switching re-renders the page. */
function langSelect(id, onchange) {
  const s = h('select', { id, 'aria-label': t('language'), title: t('language') },
    h('option', { value: 'en' }, 'English'), h('option', { value: 'zh' }, '简体中文'));
  s.value = getLang();
  s.addEventListener('change', () => { setLang(s.value); document.documentElement.lang = s.value === 'zh' ? 'zh-CN' : 'en'; onchange(); });
  return s;
}

/** The time zone selector of the top bar: job zones, the browser's zone or UTC. */
function zoneSelect(onchange) {
  const s = h('select', { id: 'zone', 'aria-label': t('zone_mode'), title: t('zone_mode') },
    ZONE_MODES.map((m) => h('option', { value: m }, t(`zone_${m}`))));
  s.value = getZoneMode();
  s.addEventListener('change', () => { setZoneMode(s.value); onchange(); });
  return s;
}

const main = () => document.getElementById('main');

function showLogin() {
  document.getElementById('top').hidden = true;
  const msg = h('p', { class: 'err', id: 'login-error' });
  const user = h('input', { name: 'username', autocomplete: 'username', required: true });
  const pass = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  // Switching language keeps what was typed.
  const relabel = () => { const [u, p] = [user.value, pass.value]; showLogin(); main().querySelector('input[name=username]').value = u; main().querySelector('input[name=password]').value = p; };
  const form = h('form', { id: 'login', class: 'card', onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      state.me = await api('POST', '/console/api/login', { username: user.value, password: pass.value });
      state.options = null;
      // Start on the dashboard: the previous user's page may not be this user's to see.
      if (location.hash && location.hash !== '#dashboard') location.hash = '#dashboard'; else render();
    } catch (e) { msg.textContent = e.message; }
  } },
  h('div', { class: 'login-head' }, h('h2', {}, 'Chime'), langSelect('login-lang', relabel)),
  h('label', {}, h('span', {}, t('username')), user),
  h('label', {}, h('span', {}, t('password')), pass),
  h('button', { type: 'submit' }, t('login')), msg);
  main().replaceChildren(form);
}

const nav = [
  ['dashboard', false], ['executors', false], ['jobs', false], ['runs', false], ['workflows', true], ['users', true], ['audit', true],
];

async function render() {
  if (!state.me) {
    try { state.me = await api('GET', '/console/api/me'); } catch { showLogin(); return; }
  }
  document.getElementById('top').hidden = false;
  const langSel = document.getElementById('lang');
  langSel.value = getLang(); langSel.title = t('language'); langSel.setAttribute('aria-label', t('language'));
  document.getElementById('who').replaceChildren(h('a', { href: '#password', title: t('change_password') },
    `${state.me.username} (${state.me.admin ? t('role_admin') : (state.me.can_write ? t('role_user') : t('read_only'))})`));
  document.getElementById('logout').textContent = t('logout');
  // Rebuilt on each render, so its words follow the language.
  document.getElementById('zone').replaceWith(zoneSelect(render));
  const [page, ...args] = (location.hash.slice(1) || 'dashboard').split('/');
  document.getElementById('nav').replaceChildren(...nav.filter(([, adm]) => !adm || state.me.admin)
    .map(([p]) => h('a', { href: `#${p}`, class: p === page ? 'on' : null }, t(p))));
  const fn = pages[page] || workflowPages[page] || pages.dashboard;
  main().replaceChildren(h('p', {}, '…'));
  try { await fn(main(), args.map(decodeURIComponent)); } catch (e) { main().replaceChildren(errorBox(e)); }
}

export function go(hash) { if (location.hash === hash) render(); else location.hash = hash; }

window.addEventListener('hashchange', render);
// A row's action menu closes when the user clicks anywhere else, as menus do.
document.addEventListener('click', (ev) => {
  for (const m of document.querySelectorAll('details.menu[open]')) if (!m.contains(ev.target)) m.open = false;
});
window.addEventListener('DOMContentLoaded', () => {
  document.documentElement.lang = getLang() === 'zh' ? 'zh-CN' : 'en';
  document.getElementById('lang').replaceWith(langSelect('lang', render));
  document.getElementById('logout').addEventListener('click', async () => {
    try { await api('POST', '/console/api/logout'); } catch { /* already gone */ }
    state.me = null; showLogin();
  });
  render();
});
