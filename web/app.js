// @ts-check
// Chime console: a small single-page app without a build step. This module is the router:
// the top bar, the login form, and which page draws `#page/args…`. The pages (pages/) build
// their DOM with lib/dom.js's `h` only; see docs/console.md for how the modules are laid out.
import { h } from './lib/dom.js';
import { api, whenSignedOut } from './lib/api.js';
import { currentUser, setUser, zoneMode, setZoneMode, ZONE_MODES } from './lib/session.js';
import { asApiError, errorBox } from './lib/forms.js';
import { t, getLang, setLang } from './i18n.js';
import { dashboard } from './pages/dashboard.js';
import { executors } from './pages/executors.js';
import { jobList } from './pages/jobs.js';
import { jobFormPage } from './pages/job-form.js';
import { script } from './pages/script.js';
import { runList } from './pages/runs.js';
import { runDetail } from './pages/run.js';
import { users } from './pages/users.js';
import { audit } from './pages/audit.js';
import { channels } from './pages/channels.js';
import { password } from './pages/password.js';
import { apiKeys } from './pages/api-keys.js';
import { workflowList } from './pages/workflows.js';
import { workflowFormPage } from './pages/workflow-form.js';
import { instanceList } from './pages/instances.js';
import { instanceView } from './pages/instance.js';
import { queue } from './pages/queue.js';
import { backfills } from './pages/backfills.js';
import { calendars } from './pages/calendars.js';

/** A page: draws itself into `root` from the hash's arguments. @typedef {(root: HTMLElement, args: string[]) => Promise<unknown>} Page */

/** @type {Record<string, (args: string[]) => Page>} */
const routes = {
  dashboard: () => dashboard,
  executors: () => executors,
  jobs: (args) => (['new', 'edit', 'copy'].includes(args[0]) ? jobFormPage : jobList),
  script: () => script,
  backfills: () => backfills,
  // `#runs/ID` is one run; `#runs` and `#runs/job/ID` are lists.
  runs: (args) => (args[0] && args[0] !== 'job' ? runDetail : runList),
  queue: () => queue,
  users: () => users,
  audit: () => audit,
  channels: () => channels,
  calendars: () => calendars,
  password: () => password,
  'api-keys': () => apiKeys,
  workflows: (args) => {
    /** @type {Record<string, Page>} */
    const sub = { new: workflowFormPage, edit: workflowFormPage, copy: workflowFormPage, instances: instanceList, instance: instanceView };
    return sub[args[0]] || workflowList;
  },
};

/** The menu: each page, and whether it is the admins' only (calendars are read by all, written by admins). */
const nav = [
  ['dashboard', false], ['executors', false], ['jobs', false], ['runs', false], ['queue', false], ['workflows', false], ['channels', true], ['calendars', false], ['api-keys', false], ['users', true], ['audit', true],
];

const main = () => /** @type {HTMLElement} */ (document.getElementById('main'));
/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * The language selector (top bar and login page): switching re-renders the page.
 * @param {string} id
 * @param {() => void} onchange
 */
function langSelect(id, onchange) {
  const s = h('select', { id, 'aria-label': t('language'), title: t('language') },
    h('option', { value: 'en' }, 'English'), h('option', { value: 'zh' }, '简体中文'));
  s.value = getLang();
  s.addEventListener('change', () => { setLang(s.value); document.documentElement.lang = s.value === 'zh' ? 'zh-CN' : 'en'; onchange(); });
  return s;
}

/**
 * The time zone selector of the top bar: job zones, the browser's zone or UTC.
 * @param {() => void} onchange
 */
function zoneSelect(onchange) {
  const s = h('select', { id: 'zone', 'aria-label': t('zone_mode'), title: t('zone_mode') },
    ZONE_MODES.map((m) => h('option', { value: m }, t(`zone_${m}`))));
  s.value = zoneMode();
  s.addEventListener('change', () => { setZoneMode(s.value); onchange(); });
  return s;
}

function showLogin() {
  byId('top').hidden = true;
  const msg = h('p', { class: 'err', id: 'login-error' });
  const user = h('input', { name: 'username', autocomplete: 'username', required: true });
  const pass = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  // Switching language keeps what was typed.
  const relabel = () => {
    const [u, p] = [user.value, pass.value];
    showLogin();
    /** @type {HTMLInputElement} */ (main().querySelector('input[name=username]')).value = u;
    /** @type {HTMLInputElement} */ (main().querySelector('input[name=password]')).value = p;
  };
  const form = h('form', { id: 'login', class: 'card', onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    try {
      setUser(await api('POST', '/console/api/login', { username: user.value, password: pass.value }));
      // Start on the dashboard: the previous user's page may not be this user's to see.
      if (location.hash && location.hash !== '#dashboard') location.hash = '#dashboard'; else render();
    } catch (e) { msg.textContent = asApiError(e).message; }
  } },
  h('div', { class: 'login-head' }, h('h2', {}, 'Chime'), langSelect('login-lang', relabel)),
  h('label', {}, h('span', {}, t('username')), user),
  h('label', {}, h('span', {}, t('password')), pass),
  h('button', { type: 'submit' }, t('login')), msg);
  main().replaceChildren(form);
  addProviderButtons(form, msg);
}

/**
 * Adds a "Sign in with NAME" link per OpenID Connect provider to the login form, below the
 * password fields. Each is a plain link: the admin sends the browser on to the provider.
 * @param {HTMLElement} form
 * @param {HTMLElement} before
 */
async function addProviderButtons(form, before) {
  /** @type {{ oidc?: string[] } | null} */
  let options = null;
  try { options = await api('GET', '/console/api/login-options'); } catch { return; }
  const names = (options && options.oidc) || [];
  if (!names.length || form.querySelector('.sso')) return;
  const links = names.map((name) => h('a', {
    class: 'button sso', id: `sso-${name}`, href: `/console/oidc/${encodeURIComponent(name)}/login`,
  }, `${t('sign_in_with')} ${name}`));
  form.insertBefore(h('div', { class: 'sso-list' }, h('span', {}, t('or')), ...links), before);
}

/** Draws the top bar and the page of the location's hash (the login form without a session). */
async function render() {
  let user = currentUser();
  if (!user) {
    try { user = await api('GET', '/console/api/me'); setUser(user); } catch { showLogin(); return; }
  }
  if (!user) return;
  byId('top').hidden = false;
  const langSel = /** @type {HTMLSelectElement} */ (byId('lang'));
  langSel.value = getLang(); langSel.title = t('language'); langSel.setAttribute('aria-label', t('language'));
  byId('who').replaceChildren(h('a', { href: '#password', title: t('change_password') },
    `${user.username} (${user.admin ? t('role_admin') : (user.can_write ? t('role_user') : t('read_only'))})`));
  byId('logout').textContent = t('logout');
  // Rebuilt on each render, so its words follow the language.
  byId('zone').replaceWith(zoneSelect(render));
  const [page, ...args] = (location.hash.slice(1) || 'dashboard').split('/');
  const admin = user.admin;
  byId('nav').replaceChildren(...nav.filter(([, adm]) => !adm || admin)
    .map(([p]) => h('a', { href: `#${p}`, class: p === page ? 'on' : null }, t(String(p)))));
  const decoded = args.map(decodeURIComponent);
  // Unknown pages (and names such as `constructor`, which every object has) show the dashboard.
  const route = Object.prototype.hasOwnProperty.call(routes, page) ? routes[page] : routes.dashboard;
  const fn = route(decoded);
  main().replaceChildren(h('p', {}, '…'));
  try { await fn(main(), decoded); } catch (e) { main().replaceChildren(errorBox(e)); }
}

// A request still on its way when the session ended (a page's refresh after a logout) finds
// the login form shown already: drawing it again would wipe what the user is typing.
whenSignedOut(() => { if (!document.getElementById('login')) showLogin(); });
window.addEventListener('hashchange', render);
// A row's action menu closes when the user clicks anywhere else, as menus do.
document.addEventListener('click', (ev) => {
  for (const m of document.querySelectorAll('details.menu[open]')) if (!m.contains(/** @type {Node} */ (ev.target))) /** @type {HTMLDetailsElement} */ (m).open = false;
});
window.addEventListener('DOMContentLoaded', () => {
  document.documentElement.lang = getLang() === 'zh' ? 'zh-CN' : 'en';
  byId('lang').replaceWith(langSelect('lang', render));
  byId('logout').addEventListener('click', async () => {
    /** @type {{ redirect?: string } | null} */
    let out = null;
    try { out = await api('POST', '/console/api/logout'); } catch { /* already gone */ }
    setUser(null);
    // A user of an OpenID Connect provider is signed out there too, then comes back here.
    if (out && out.redirect) { location.assign(out.redirect); return; }
    showLogin();
  });
  render();
});
