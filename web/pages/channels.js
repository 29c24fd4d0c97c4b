// @ts-check
// Alarm channels (admins): the list, the channel form built from `CHANNEL_FIELDS` showing only
// the inputs the chosen kind takes, and a test message per channel.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { go } from '../lib/nav.js';
import { CHANNEL_FIELDS, channelInputs, channelBody, keptPlaceholders, kindName } from '../lib/channels.js';
import { controls, control, valuesOf, asApiError, errorBox, showError, clearErrors } from '../lib/forms.js';
import { t } from '../i18n.js';

/**
 * The channel form: a new channel (`ch` null) or an edit.
 * @param {any} ch
 */
function channelForm(ch) {
  const isNew = !ch;
  const ctl = controls(CHANNEL_FIELDS, ch, { isNew });
  const kind = /** @type {HTMLSelectElement} */ (control(ctl, 'kind').input);
  // Where a receiver's webhook URL (and secret) come from, for the kind chosen.
  const hint = h('small', { class: 'help', id: 'chan-kind-hint' });
  control(ctl, 'kind').row.append(hint);
  if (ch) {
    const kept = keptPlaceholders(ch, t('chan_kept'));
    /** @type {HTMLInputElement} */ (control(ctl, 'url').input).placeholder = kept.url || 'https://…';
    /** @type {HTMLInputElement} */ (control(ctl, 'secret').input).placeholder = kept.secret;
  }
  const msg = h('div');
  // Only the inputs the kind takes; *Remove the secret* only when there is one to remove (a
  // kind change starts from nothing, so only on the stored kind).
  const toggle = () => {
    const taken = channelInputs(kind.value);
    for (const [name, c] of ctl) {
      c.row.hidden = !taken.includes(name) || (name === 'clear_secret' && !(ch && ch.secret_set && ch.kind === kind.value));
    }
    hint.textContent = t(`chan_hint_${kind.value}`);
  };
  kind.addEventListener('change', toggle);
  toggle();
  const form = h('form', { class: 'card channel-form', id: 'channel-form', onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    clearErrors(form); msg.replaceChildren();
    const body = channelBody(valuesOf(ctl));
    try {
      ch ? await api('PUT', `/v1/alarm-channels/${ch.id}`, body) : await api('POST', '/v1/alarm-channels', body);
      go('#channels');
    } catch (e) { showError(form, msg, e); }
  } },
  h('h3', {}, isNew ? t('new_channel') : `${t('edit')} — ${ch.name}`),
  [...ctl.values()].map((c) => c.row),
  h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('save')), h('button', { type: 'button', onclick: () => form.remove() }, t('cancel'))), msg);
  return form;
}

/**
 * Sends a channel's test message and says how it went in `out`: *Delivered*, or the
 * receiver's refusal as the admin words it (text, like everything else on the page).
 * @param {any} ch
 * @param {HTMLButtonElement} button
 * @param {HTMLElement} out
 */
async function sendTest(ch, button, out) {
  button.disabled = true;
  out.className = 'test-result note'; out.dataset.result = 'sending'; out.textContent = t('chan_testing');
  try {
    await api('POST', `/v1/alarm-channels/${ch.id}/test`);
    out.className = 'test-result ok'; out.dataset.result = 'delivered'; out.textContent = t('chan_delivered');
  } catch (e) {
    out.className = 'test-result err'; out.dataset.result = 'failed'; out.textContent = asApiError(e).message;
  } finally {
    button.disabled = false;
  }
}

/** @param {HTMLElement} root */
export async function channels(root) {
  /** @type {any[]} */
  const list = await api('GET', '/v1/alarm-channels');
  const slot = h('div');
  /** @param {any} ch */
  const row = (ch) => {
    const out = h('span', { class: 'test-result' });
    const test = h('button', { type: 'button', class: 'test', onclick: () => sendTest(ch, test, out) }, t('chan_send_test'));
    return h('tr', { 'data-channel': ch.name },
      h('td', { class: 'name' }, ch.name),
      h('td', { class: 'kind', 'data-kind': ch.kind }, kindName(ch.kind)),
      h('td', { class: 'url' }, ch.url),
      h('td', { class: 'signed' }, ch.secret_set ? t('chan_signed') : ''),
      h('td', { class: 'recipients' }, ch.recipients),
      h('td', { class: 'row-actions' },
        h('button', { type: 'button', class: 'edit', onclick: () => slot.replaceChildren(channelForm(ch)) }, t('edit')),
        h('button', { type: 'button', class: 'remove', onclick: async () => {
          if (!confirm(t('confirm_delete'))) return;
          // 409 while a job or group names the channel: the admin's reason is shown.
          try { await api('DELETE', `/v1/alarm-channels/${ch.id}`); go('#channels'); } catch (e) { slot.replaceChildren(errorBox(e)); }
        } }, t('remove')),
        test),
      h('td', { class: 'test' }, out));
  };
  root.replaceChildren(h('h2', {}, t('channels')),
    h('p', { class: 'note' }, t('channels_intro')),
    h('button', { id: 'add-channel', type: 'button', onclick: () => slot.replaceChildren(channelForm(null)) }, t('new_channel')), slot,
    list.length
      ? h('table', { id: 'channels' },
        h('thead', {}, h('tr', {}, [t('chan_name'), t('chan_kind'), t('chan_url'), t('chan_secret'), t('chan_recipients'), '', t('chan_test_result')].map((x) => h('th', {}, x)))),
        h('tbody', {}, list.map(row)))
      : h('p', { class: 'note', id: 'no-channels' }, t('no_channels')));
}
