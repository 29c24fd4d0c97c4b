// @ts-check
// API keys (every user): the keys one has made (an administrator sees all), a form to make one
// within one's own rights, its token shown once, and revoking.
import { h } from '../lib/dom.js';
import { api, groupsList } from '../lib/api.js';
import { go } from '../lib/nav.js';
import { me } from '../lib/session.js';
import { field, sel, num, errorBox, showError, clearErrors } from '../lib/forms.js';
import { fmtTime } from '../lib/time.js';
import { t } from '../i18n.js';

const DAY_MS = 24 * 3600 * 1000;

/**
 * The form that makes a key; `shown` receives the answer (the key and its token).
 * @param {any[]} groups the groups the user may give
 * @param {boolean} admin
 * @param {boolean} canWrite
 * @param {(made: any) => void} shown
 */
function keyForm(groups, admin, canWrite, shown) {
  const name = h('input', { name: 'name', required: true, maxlength: 60, pattern: '[A-Za-z0-9._-]+', placeholder: 'ci-deploy' });
  /** @type {Array<[string, string]>} */
  const roles = [['viewer', t('key_role_viewer')]];
  if (canWrite || admin) roles.push(['operator', t('key_role_operator')], ['editor', t('key_role_editor')]);
  if (admin) roles.push(['admin', t('key_role_admin')]);
  const role = /** @type {HTMLSelectElement} */ (sel('role', roles, 'viewer'));
  const pick = /** @type {HTMLSelectElement} */ (h('select', { name: 'group_ids', multiple: true, size: Math.min(6, Math.max(2, groups.length)) },
    groups.map((g) => h('option', { value: String(g.id) }, g.app_name))));
  const days = h('input', { name: 'expires_days', type: 'number', min: 1, max: 366, value: 90 });
  const groupRow = field('groups', pick, h('small', { class: 'help' }, t('key_groups_hint')));
  role.addEventListener('change', () => { groupRow.hidden = role.value === 'admin'; });
  const msg = h('div');
  const form = h('form', { class: 'card', id: 'key-form', onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    clearErrors(form); msg.replaceChildren();
    const n = num(/** @type {HTMLInputElement} */ (days).value);
    const body = {
      name: /** @type {HTMLInputElement} */ (name).value,
      role: role.value,
      group_ids: role.value === 'admin' ? [] : [...pick.selectedOptions].map((o) => Number(o.value)),
      expires_at: n === undefined ? undefined : Date.now() + n * DAY_MS,
    };
    try { shown(await api('POST', '/v1/api-keys', body)); } catch (e) { showError(form, msg, e); }
  } },
  h('h3', {}, t('new_api_key')),
  field('key_name', name), field('role', role), groupRow, field('key_expires_days', days),
  h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('save')), h('button', { type: 'button', onclick: () => form.remove() }, t('cancel'))), msg);
  return form;
}

/**
 * A new key's token, shown this once.
 * @param {any} made
 */
function tokenCard(made) {
  const token = h('input', { id: 'new-key-token', readonly: true, value: made.token, size: 72, onfocus: (/** @type {Event} */ ev) => /** @type {HTMLInputElement} */ (ev.target).select() });
  return h('div', { class: 'card', id: 'key-made' },
    h('p', { class: 'ok' }, t('key_made').replace('{name}', made.key.name)),
    h('p', {}, t('key_token_once')), token,
    h('p', {}, h('code', {}, `Authorization: Bearer ${made.token.slice(0, 12)}…`)),
    h('button', { type: 'button', onclick: () => go('#api-keys') }, t('key_done')));
}

/** @param {HTMLElement} root */
export async function apiKeys(root) {
  const user = me();
  /** @type {[any[], any[]]} */
  const [keys, groups] = await Promise.all([api('GET', '/v1/api-keys'), groupsList()]);
  const slot = h('div');
  /** @param {number} id */
  const gname = (id) => (groups.find((g) => g.id === id) || {}).app_name || String(id);
  const open = () => slot.replaceChildren(keyForm(groups, user.admin, user.can_write, (made) => slot.replaceChildren(tokenCard(made))));
  root.replaceChildren(h('h2', {}, t('api-keys')), h('p', { class: 'help' }, t('api_keys_intro')),
    h('button', { id: 'add-key', type: 'button', onclick: open }, t('add')), slot,
    h('table', { id: 'api-keys' },
      h('tr', {}, [t('key_name'), t('key_prefix'), t('role'), t('groups'), t('status'), t('key_expires'), t('key_last_used'), t('user'), ''].map((x) => h('th', {}, x))),
      keys.map((k) => h('tr', { 'data-key': k.name },
        h('td', {}, k.name), h('td', {}, h('code', {}, `${k.prefix}…`)), h('td', {}, t(`key_role_${k.role}`)),
        h('td', {}, k.group_ids.length ? k.group_ids.map(gname).join(', ') : t('all')),
        h('td', { class: `key-${k.state}` }, t(`key_state_${k.state}`)),
        h('td', {}, fmtTime(k.expires_at)), h('td', {}, k.last_used_at ? fmtTime(k.last_used_at) : '—'), h('td', {}, k.created_by),
        h('td', {}, k.state === 'revoked' ? '' : h('button', { type: 'button', class: 'revoke', onclick: async () => {
          if (!confirm(t('key_confirm_revoke').replace('{name}', k.name))) return;
          try { await api('DELETE', `/v1/api-keys/${k.id}`); go('#api-keys'); } catch (e) { slot.replaceChildren(errorBox(e)); }
        } }, t('key_revoke')))))));
}
