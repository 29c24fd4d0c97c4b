// @ts-check
// The alarm channel form without a page (web/lib/channels.js): which inputs each kind takes,
// the body the form sends (no URL or secret on an edit that left them empty, nothing a kind
// does not take), the edit form's placeholders, and the channel names suggested in a list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CHANNEL_KINDS, CHANNEL_FIELDS, channelInputs, channelBody, keptPlaceholders, channelSuggestions, kindName } from '../../web/lib/channels.js';
import { initialValue, GROUP_FIELDS, JOB_FIELDS, bodyOf } from '../../web/lib/fields.js';
import { setLang } from '../../web/i18n.js';

/** Every input of the form filled in, as a user who tried each kind in turn would leave it. */
const TYPED = {
  name: 'ops', kind: 'slack', url: ' https://hooks.slack.com/services/T/B/x ', secret: 's3cret', clear_secret: false,
  recipients: 'ops@example.com', template: '{"text":"${job} failed"}',
};

test('each kind takes only its own inputs, name and kind first', () => {
  assert.deepEqual(CHANNEL_KINDS, ['email', 'webhook', 'slack', 'teams', 'dingtalk', 'feishu', 'wecom']);
  assert.deepEqual(channelInputs('email'), ['name', 'kind', 'recipients']);
  assert.deepEqual(channelInputs('webhook'), ['name', 'kind', 'url', 'secret', 'clear_secret', 'template']);
  for (const k of ['slack', 'teams', 'wecom']) assert.deepEqual(channelInputs(k), ['name', 'kind', 'url'], k);
  for (const k of ['dingtalk', 'feishu']) assert.deepEqual(channelInputs(k), ['name', 'kind', 'url', 'secret', 'clear_secret'], k);
  // Every input a kind takes is a field of the form.
  const names = CHANNEL_FIELDS.map((f) => f.name);
  for (const k of CHANNEL_KINDS) for (const i of channelInputs(k)) assert.ok(names.includes(i), `${k}: ${i}`);
  assert.deepEqual(channelInputs('carrier-pigeon'), ['name', 'kind']);
});

test('the body holds what the chosen kind takes, whatever else was typed', () => {
  assert.deepEqual(channelBody(TYPED), { name: 'ops', kind: 'slack', url: 'https://hooks.slack.com/services/T/B/x' });
  assert.deepEqual(channelBody({ ...TYPED, kind: 'email' }), { name: 'ops', kind: 'email', recipients: 'ops@example.com' });
  assert.deepEqual(channelBody({ ...TYPED, kind: 'dingtalk' }), { name: 'ops', kind: 'dingtalk', url: 'https://hooks.slack.com/services/T/B/x', secret: 's3cret' });
  assert.deepEqual(channelBody({ ...TYPED, kind: 'webhook' }), {
    name: 'ops', kind: 'webhook', url: 'https://hooks.slack.com/services/T/B/x', secret: 's3cret', template: '{"text":"${job} failed"}',
  });
});

test('an empty URL or secret is left out, so an edit keeps the stored ones; "remove" sends an empty secret', () => {
  const edit = { ...TYPED, kind: 'feishu', url: '', secret: '' };
  const body = channelBody(edit);
  assert.deepEqual(body, { name: 'ops', kind: 'feishu' });
  assert.ok(!('url' in body) && !('secret' in body), 'no url or secret key at all, not even null or empty');
  assert.deepEqual(channelBody({ ...edit, url: '   ' }), { name: 'ops', kind: 'feishu' }, 'blanks are no URL');
  assert.deepEqual(channelBody({ ...edit, clear_secret: true }), { name: 'ops', kind: 'feishu', secret: '' });
  assert.deepEqual(channelBody({ ...edit, secret: 'new', clear_secret: true }), { name: 'ops', kind: 'feishu', secret: '' }, 'removing wins');
  // A secret is never trimmed: its spaces may be part of it.
  assert.equal(channelBody({ ...edit, secret: ' s ' }).secret, ' s ');
  // An empty template and recipients are sent: they are the channel's, shown in the form.
  assert.equal(channelBody({ ...edit, kind: 'webhook', template: '' }).template, '');
});

test('the edit form starts with the stored name, kind, recipients and template, never the URL or secret', () => {
  const stored = { id: 3, name: 'ops', kind: 'webhook', url: 'https://hooks.example.com/…', secret_set: true, recipients: '', template: '{"a":"${job}"}' };
  const read = Object.fromEntries(CHANNEL_FIELDS.map((f) => [f.name, initialValue(f, stored)]));
  assert.deepEqual(read, { name: 'ops', kind: 'webhook', url: '', secret: '', clear_secret: false, recipients: '', template: '{"a":"${job}"}' });
  // Saved untouched, the edit sends no URL or secret.
  assert.deepEqual(channelBody(read), { name: 'ops', kind: 'webhook', template: '{"a":"${job}"}' });
  const fresh = Object.fromEntries(CHANNEL_FIELDS.map((f) => [f.name, initialValue(f, null)]));
  assert.equal(fresh.kind, 'slack');
});

test('the placeholders of an edit say what is kept', () => {
  assert.deepEqual(keptPlaceholders({ url: 'https://oapi.dingtalk.com/…', secret_set: true }, '(kept)'), { url: 'https://oapi.dingtalk.com/… (kept)', secret: '(kept)' });
  assert.deepEqual(keptPlaceholders({ url: '', secret_set: false }, '(kept)'), { url: '', secret: '' });
});

test('channel names are suggested as the next entry of the list typed so far', () => {
  const names = ['ops-slack', 'oncall', 'dev'];
  assert.deepEqual(channelSuggestions('', names), ['ops-slack', 'oncall', 'dev']);
  assert.deepEqual(channelSuggestions('on', names), ['ops-slack', 'oncall', 'dev'], 'the browser matches what is being typed');
  assert.deepEqual(channelSuggestions('ops-slack,', names), ['ops-slack, oncall', 'ops-slack, dev'], 'a name listed is not offered again');
  assert.deepEqual(channelSuggestions('ops-slack, de', names), ['ops-slack, oncall', 'ops-slack, dev']);
  assert.deepEqual(channelSuggestions(' dev ,ops-slack , x', names), [' dev ,ops-slack , oncall']);
  assert.deepEqual(channelSuggestions('a,b', []), []);
});

test('kinds are named; an unknown kind is shown as it is', () => {
  setLang('zh');
  assert.equal(kindName('dingtalk'), '钉钉');
  setLang('en');
  assert.equal(kindName('dingtalk'), 'DingTalk');
  assert.equal(kindName('pager'), 'pager');
});

test('jobs and groups send their channel names as typed; an empty list is sent, to clear it', () => {
  const job = /** @type {any} */ (JOB_FIELDS.find((f) => f.name === 'alarm_channels'));
  assert.equal(job.section, 'alarms');
  assert.equal(initialValue(job, { alarm_channels: 'ops,dev' }), 'ops,dev');
  assert.deepEqual(bodyOf([job], { alarm_channels: 'ops, dev' }), { alarm_channels: 'ops, dev' });
  assert.deepEqual(bodyOf([job], { alarm_channels: '' }), { alarm_channels: '' });
  const group = /** @type {any} */ (GROUP_FIELDS.find((f) => f.name === 'alarm_channels'));
  assert.deepEqual(bodyOf([group], { alarm_channels: 'ops' }), { alarm_channels: 'ops' });
  assert.equal(initialValue(group, null), '');
});
