// @ts-check
// Console users (admins): the list with each user's role in each group, and the user form
// built from `USER_FIELDS`.
import { h } from '../lib/dom.js';
import { api, groupsList } from '../lib/api.js';
import { go } from '../lib/nav.js';
import { USER_FIELDS } from '../lib/fields.js';
import { controls, formBody, errorBox, showError } from '../lib/forms.js';
import { t } from '../i18n.js';

/** @param {HTMLElement} root */
export async function users(root) {
  /** @type {[any[], any[]]} */
  const [list, groups] = await Promise.all([api('GET', '/v1/users'), groupsList()]);
  const slot = h('div');
  const choices = { groups: groups.map((g) => ({ value: String(g.id), label: g.app_name })) };
  /** @param {any} u the user edited, or null for a new one */
  const form = (u) => {
    const ctl = controls(USER_FIELDS, u, { isNew: !u, choices });
    const msg = h('div');
    return h('form', { class: 'card', id: 'user-form', onsubmit: async (/** @type {Event} */ ev) => {
      ev.preventDefault();
      const body = formBody(USER_FIELDS, ctl, { isNew: !u });
      try { u ? await api('PUT', `/v1/users/${u.id}`, body) : await api('POST', '/v1/users', body); go('#users'); } catch (e) { showError(/** @type {HTMLFormElement} */ (ev.target), msg, e); }
    } }, [...ctl.values()].map((c) => c.row), h('button', { type: 'submit' }, t('save')), msg);
  };
  /** @param {number} id */
  const gname = (id) => (groups.find((g) => g.id === id) || {}).app_name || id;
  root.replaceChildren(h('h2', {}, t('users')), h('button', { id: 'add-user', type: 'button', onclick: () => slot.replaceChildren(form(null)) }, t('add')), slot,
    h('table', { id: 'users' }, h('tr', {}, [t('username'), t('role'), t('groups'), ''].map((x) => h('th', {}, x))),
      list.map((u) => h('tr', { 'data-user': u.username }, h('td', {}, u.username), h('td', {}, t(`role_${u.role}`)),
        h('td', {}, u.role === 'admin' ? t('all') : (u.group_roles || []).map((/** @type {any} */ g) => `${gname(g.group_id)} (${t(`grole_${g.role}`)})`).join(', ')),
        h('td', {}, h('button', { type: 'button', class: 'edit', onclick: () => slot.replaceChildren(form(u)) }, t('edit')),
          h('button', { type: 'button', onclick: async () => { if (confirm(t('confirm_delete'))) { try { await api('DELETE', `/v1/users/${u.id}`); go('#users'); } catch (e) { slot.replaceChildren(errorBox(e)); } } } }, t('remove')))))));
}
