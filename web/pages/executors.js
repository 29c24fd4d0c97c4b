// @ts-check
// Executor groups: their live executors, (admins) the group form, and (group admins) who holds
// which role in a group.
import { h } from '../lib/dom.js';
import { api, groupsList } from '../lib/api.js';
import { me, holds, GROUP_ROLES } from '../lib/session.js';
import { go } from '../lib/nav.js';
import { fmtTime } from '../lib/time.js';
import { GROUP_FIELDS } from '../lib/fields.js';
import { controls, control, formBody, errorBox, showError, sel, field } from '../lib/forms.js';
import { channelNames } from '../lib/widgets.js';
import { t } from '../i18n.js';

/**
 * The members of group `g` and their roles, changed in place by a group admin: a role per
 * member (or none, which takes the group from them), and a form that gives a user a role.
 * @param {any} g
 * @param {(panel: Node) => void} show puts the panel on the page (again, after a change)
 */
async function membersPanel(g, show) {
  /** @type {any[]} */
  const members = await api('GET', `/v1/groups/${g.id}/members`);
  const msg = h('div');
  const roles = /** @type {Array<[string, string]>} */ (GROUP_ROLES.map((r) => [r, t(`grole_${r}`)]));
  /** @param {string} username @param {string | null} role */
  const change = async (username, role) => {
    try { await api('PUT', `/v1/groups/${g.id}/members`, { username, role }); show(await membersPanel(g, show)); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  const name = h('input', { name: 'username', required: true, maxlength: 64, autocomplete: 'off' });
  const role = /** @type {HTMLSelectElement} */ (sel('role', roles, 'viewer'));
  return h('div', { class: 'card', id: 'members', 'data-group': g.app_name },
    h('h3', {}, `${t('members')} — ${g.app_name}`),
    h('table', { id: 'member-list' }, h('tr', {}, [t('username'), t('role'), ''].map((x) => h('th', {}, x))),
      members.map((m) => {
        const s = /** @type {HTMLSelectElement} */ (sel('role', roles, m.role));
        s.addEventListener('change', () => change(m.username, s.value));
        return h('tr', { 'data-member': m.username }, h('td', {}, m.username), h('td', {}, s),
          h('td', {}, h('button', { type: 'button', class: 'remove-member', onclick: () => change(m.username, null) }, t('remove'))));
      })),
    h('form', { id: 'member-form', onsubmit: (/** @type {Event} */ ev) => { ev.preventDefault(); change(/** @type {HTMLInputElement} */ (name).value.trim(), role.value); } },
      field('username', name), field('role', role), h('button', { type: 'submit' }, t('add'))),
    h('p', { class: 'help' }, t('group_roles_help')), msg);
}

/** @param {HTMLElement} root */
export async function executors(root) {
  const [groups, live] = await Promise.all([groupsList(), api('GET', '/v1/executors')]);
  /** @param {number} id @returns {any[]} */
  const liveOf = (id) => (live.find((/** @type {any} */ g) => g.group_id === id) || { executors: [] }).executors;
  /** @param {any} g the group edited, or null for a new one */
  const form = (g) => {
    const ctl = controls(GROUP_FIELDS, g, { isNew: !g });
    const msg = h('div');
    return h('form', { class: 'card', id: 'group-form', onsubmit: async (/** @type {SubmitEvent} */ ev) => {
      ev.preventDefault();
      const body = formBody(GROUP_FIELDS, ctl, { isNew: !g });
      try { g ? await api('PUT', `/v1/groups/${g.id}`, body) : await api('POST', '/v1/groups', body); go('#executors'); } catch (e) { showError(/** @type {HTMLFormElement} */ (ev.target), msg, e); }
    } }, [...ctl.values()].map((c) => c.row), channelNames(/** @type {HTMLInputElement} */ (control(ctl, 'alarm_channels').input), me().admin),
    h('button', { type: 'submit' }, t('save')), msg);
  };
  const slot = h('div');
  const admin = me().admin;
  // Groups are the admins' to change: a group's addresses receive the executor access token,
  // which every group shares (the server refuses others anyway).
  root.replaceChildren(h('h2', {}, t('executors')),
    admin ? h('button', { id: 'add-group', onclick: () => slot.replaceChildren(form(null)) }, t('add')) : h('p', { class: 'note', id: 'groups-note' }, t('groups_admin_only')), slot,
    h('table', { id: 'groups' }, h('tr', {}, [t('app_name'), t('title'), t('addresses'), t('last_heartbeat'), t('address_type'), t('alarm_channels'), ''].map((x) => h('th', {}, x))),
      groups.map((g) => h('tr', { 'data-app': g.app_name }, h('td', {}, g.app_name,
        g.insecure_no_token ? h('span', { class: 'no-token', title: t('insecure_no_token_help') }, ` (${t('no_token')})`) : ''), h('td', {}, g.title),
        // A manual address has no heartbeat: the admin asked it (`/beat`) for this list.
        h('td', {}, liveOf(g.id).map((e) => h('div', { class: 'address' }, e.address,
          e.linked ? h('span', { class: 'linked', title: t('linked_hint') }, ` (${t('linked')})`) : '',
          e.answers == null ? '' : h('span', { class: `answers ${e.answers ? 'yes' : 'no'}` }, ` (${t(e.answers ? 'address_answers' : 'address_silent')})`)))),
        h('td', {}, liveOf(g.id).map((e) => h('div', {}, fmtTime(e.last_heartbeat)))),
        h('td', { class: 'address-type', 'data-type': g.address_type }, t(g.address_type === 'manual' ? 'address_manual' : 'address_auto_reg')),
        // The channels the group's jobs that name none alarm to.
        h('td', { class: 'alarm-channels' }, g.alarm_channels || '—'),
        h('td', {}, admin ? [h('button', { onclick: () => slot.replaceChildren(form(g)) }, t('edit')),
          h('button', { onclick: async () => { if (confirm(t('confirm_delete'))) { try { await api('DELETE', `/v1/groups/${g.id}`); go('#executors'); } catch (e) { slot.replaceChildren(errorBox(e)); } } } }, t('remove'))] : '',
        // Group admins (and administrators) say who holds which role in the group.
        holds(g.id, 'group_admin') ? h('button', { class: 'members', onclick: async () => { try { slot.replaceChildren(await membersPanel(g, (p) => slot.replaceChildren(p))); } catch (e) { slot.replaceChildren(errorBox(e)); } } }, t('members')) : '')))));
}
