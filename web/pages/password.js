// @ts-check
// Changing one's own password (every user, read-only ones too).
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { field, clearErrors, showError } from '../lib/forms.js';
import { t } from '../i18n.js';

/** @param {HTMLElement} root */
export async function password(root) {
  const cur = h('input', { name: 'current_password', type: 'password', autocomplete: 'current-password', required: true });
  const nw = h('input', { name: 'new_password', type: 'password', autocomplete: 'new-password', required: true });
  const msg = h('div');
  const form = h('form', { class: 'card', id: 'password-form', onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    try {
      await api('POST', '/v1/me/password', { current_password: cur.value, new_password: nw.value });
      cur.value = ''; nw.value = '';
      clearErrors(form);
      msg.replaceChildren(h('p', { class: 'ok' }, t('saved')));
    } catch (e) { showError(form, msg, e); }
  } }, field('current_password', cur), field('new_password', nw), h('button', { type: 'submit' }, t('save')), msg);
  root.replaceChildren(h('h2', {}, t('change_password')), form);
}
