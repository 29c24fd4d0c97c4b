// @ts-check
// Alarm channels (`/v1/alarm-channels`) as the console edits them: the kinds, which inputs
// each kind takes, the channel form's field table and the body it sends, and the channel
// names suggested in a comma-separated list (the `alarm_channels` of jobs and groups).
//
// Nothing here touches the page: it is tested under Node.
import { bodyOf } from './fields.js';
import { t } from '../i18n.js';

/** @typedef {import('./fields.js').Field} Field */
/** @typedef {import('./fields.js').RawValues} RawValues */

/** Every kind of channel, in the order the admin's documentation lists them. */
export const CHANNEL_KINDS = ['email', 'webhook', 'slack', 'teams', 'dingtalk', 'feishu', 'wecom'];

/**
 * The inputs each kind takes besides its name and kind. The admin refuses the others (a URL
 * on an e-mail channel, a secret where the receiver checks no signature, a template outside
 * the generic webhook), so the form shows only these and sends only these.
 * @type {Record<string, string[]>}
 */
const KIND_INPUTS = {
  email: ['recipients'],
  webhook: ['url', 'secret', 'clear_secret', 'template'],
  slack: ['url'],
  teams: ['url'],
  dingtalk: ['url', 'secret', 'clear_secret'],
  feishu: ['url', 'secret', 'clear_secret'],
  wecom: ['url'],
};

/**
 * The inputs of the channel form that kind `kind` takes, name and kind first.
 * @param {string} kind
 * @returns {string[]}
 */
export function channelInputs(kind) {
  return ['name', 'kind', ...(KIND_INPUTS[kind] || [])];
}

/**
 * The name of a channel kind in the chosen language (*DingTalk*, 钉钉…); a kind this console
 * does not know (a newer admin's) as it is.
 * @param {string} kind
 */
export function kindName(kind) {
  const key = `chan_kind_${kind}`;
  return t(key) === key ? kind : t(key);
}

/** @param {import('./fields.js').RawValue} v */
const text = (v) => (v === undefined ? '' : String(v));

/**
 * The channel form. The admin shows a channel's URL only up to its host and never its secret,
 * so neither is read into the form: left empty on an edit they are left out of the body and
 * the admin keeps the stored ones. *Remove the secret* sends an empty one, which removes it.
 */
export const CHANNEL_FIELDS = /** @type {Field[]} */ ([
  { name: 'name', kind: 'text', label: 'chan_name', help: 'chan_name_help', attrs: { maxlength: '64', autocomplete: 'off', spellcheck: 'false' } },
  { name: 'kind', kind: 'select', label: 'chan_kind', choices: CHANNEL_KINDS.map((k) => ({ value: k, key: `chan_kind_${k}` })), initial: 'slack' },
  { name: 'url', kind: 'text', label: 'chan_url', attrs: { maxlength: '2048', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://…' }, read: () => '', parse: (v) => text(v).trim() || undefined },
  { name: 'secret', kind: 'password', label: 'chan_secret', attrs: { maxlength: '512', autocomplete: 'new-password' }, read: () => '',
    parse: (v, values) => (values.clear_secret === true ? '' : text(v) || undefined) },
  // Not a field of the body: it makes `secret` empty (see above).
  { name: 'clear_secret', kind: 'checkbox', label: 'chan_clear_secret', read: () => false, parse: () => undefined },
  { name: 'recipients', kind: 'text', label: 'chan_recipients', attrs: { maxlength: '1024', placeholder: 'ops@example.com, dev@example.com' } },
  { name: 'template', kind: 'textarea', label: 'chan_template', help: 'chan_template_help', attrs: { rows: '6', spellcheck: 'false' } },
]);

/**
 * The body of the channel form: the inputs the chosen kind takes, the others left out (they
 * may still hold what was typed before the kind was changed). On an edit, an empty URL or
 * secret is left out too, so the stored one stays.
 * @param {RawValues} values the inputs' values by field name
 * @returns {Record<string, unknown>}
 */
export function channelBody(values) {
  const taken = channelInputs(text(values.kind));
  /** @type {RawValues} */
  const own = {};
  for (const name of taken) if (name in values) own[name] = values[name];
  return bodyOf(CHANNEL_FIELDS, own, { isNew: true });
}

/**
 * The placeholders of the edit form's empty URL and secret inputs: the URL as the admin shows
 * it (up to its host, `https://oapi.dingtalk.com/…`) and that it is kept when left empty; the
 * secret's only when one is set.
 * @param {{url?: string, secret_set?: boolean}} channel
 * @param {string} keepWord the translated "(set — leave empty to keep)"
 * @returns {{url: string, secret: string}} the placeholders of the URL and secret inputs
 */
export function keptPlaceholders(channel, keepWord) {
  return {
    url: channel.url ? `${channel.url} ${keepWord}` : '',
    secret: channel.secret_set ? keepWord : '',
  };
}

/**
 * The suggestions for a comma-separated list of channel names being typed: for each known
 * name not in the list yet, the list with that name as its last entry. A browser's datalist
 * suggests whole values that match what was typed, so each suggestion is the list as it
 * would read with the name picked.
 * @param {string} typed what the input holds
 * @param {string[]} names the channels' names
 * @returns {string[]}
 */
export function channelSuggestions(typed, names) {
  const cut = typed.lastIndexOf(',');
  const head = cut < 0 ? '' : typed.slice(0, cut + 1);
  const chosen = new Set(head.split(',').map((n) => n.trim()).filter(Boolean));
  const prefix = head ? `${head.trimEnd()} ` : '';
  return names.filter((n) => !chosen.has(n)).map((n) => `${prefix}${n}`);
}
