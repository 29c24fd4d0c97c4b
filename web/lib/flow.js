// @ts-check
// Flow control as the Queue page shows it, without the page: a limit's kind from its name and
// its name from a kind and a value, the API path of a limit, how full a limit is, what a queued
// run is doing, how long it has waited in words, and which changes of the limits list a
// refresh may apply without taking what the user is typing.
//
// Nothing here touches the page: the functions are tested under Node.
import { t } from '../i18n.js';

/** The prefix of a group's limit (every run of that executor group). */
export const GROUP_PREFIX = 'group:';
/** The prefix of an executor's limit (every run sent to that address). */
export const EXECUTOR_PREFIX = 'executor:';

/**
 * What a limit applies to: `key` (every job of that concurrency key), `group` or `executor`.
 * @typedef {'key' | 'group' | 'executor'} LimitKind
 */

/** The kinds of limit, in the order the add form offers them. @type {LimitKind[]} */
export const LIMIT_KINDS = ['key', 'group', 'executor'];

/**
 * A limit from `GET /v1/limits`.
 * @typedef {object} Limit
 * @property {string} name
 * @property {number | null} max_running null: any number may run at once (a rate-only limit)
 * @property {number | null} [rate] runs that may start per `per`
 * @property {string | null} [per] `second` or `minute`
 * @property {number | null} [queue_timeout_secs]
 * @property {number} running
 * @property {number} queued
 * @property {number} updated_at
 */

/**
 * A run waiting in the queue, from `GET /v1/queue`.
 * @typedef {object} QueuedRun
 * @property {number} run_id
 * @property {number} job_id
 * @property {number} group_id
 * @property {string} description
 * @property {string} waits_on
 * @property {number} priority
 * @property {number} queued_at
 * @property {number} waited_ms
 * @property {number} position
 * @property {boolean} skip_queue
 * @property {boolean} leaving
 */

/**
 * The kind of the limit named `name`, and what it names (the key, the app name, the address).
 * @param {string} name
 * @returns {{kind: LimitKind, value: string}}
 */
export function splitLimitName(name) {
  if (name.startsWith(GROUP_PREFIX)) return { kind: 'group', value: name.slice(GROUP_PREFIX.length) };
  if (name.startsWith(EXECUTOR_PREFIX)) return { kind: 'executor', value: name.slice(EXECUTOR_PREFIX.length) };
  return { kind: 'key', value: name };
}

/**
 * The name of the limit of `kind` on `value` (a concurrency key, an app name, an executor's
 * address), as typed: surrounding blanks go, and an address loses the trailing slash the admin
 * refuses. The admin checks the rest.
 * @param {LimitKind} kind
 * @param {string} value
 */
export function limitName(kind, value) {
  const v = value.trim();
  switch (kind) {
    case 'group': return `${GROUP_PREFIX}${v}`;
    case 'executor': return `${EXECUTOR_PREFIX}${v.replace(/\/+$/, '')}`;
    default: return v;
  }
}

/**
 * The API path of the limit named `name` (`PUT` and `DELETE`): the name is one path segment,
 * so an executor's address (`executor:http://host:9999`) is encoded whole.
 * @param {string} name
 */
export const limitPath = (name) => `/v1/limits/${encodeURIComponent(name)}`;

/**
 * How full a limit is: `over` (more run than its maximum: runs sent on with "Run now", or a
 * maximum lowered under the running count), `full` (new runs wait), or `free`.
 * @param {Pick<Limit, 'running' | 'max_running'>} limit
 * @returns {'over' | 'full' | 'free'}
 */
export function fullness(limit) {
  if (limit.max_running == null) return 'free';
  if (limit.running > limit.max_running) return 'over';
  return limit.running >= limit.max_running ? 'full' : 'free';
}

/**
 * The running count against the maximum (`3 / 5`, `3 / —` without one), with the rate and the
 * queue timeout when the limit has them (`· 10/s`, `· 10/min`, `· ⏱ 60 s`).
 * @param {Limit} limit
 * @returns {string}
 */
export function loadText(limit) {
  let text = `${limit.running} / ${limit.max_running ?? '—'}`;
  if (limit.rate != null) text += ` · ${limit.rate}/${limit.per === 'minute' ? 'min' : 's'}`;
  if (limit.queue_timeout_secs != null) text += ` · ⏱ ${limit.queue_timeout_secs} s`;
  return text;
}

/**
 * The body that sets `limit`'s maximum to `max` and keeps the rest of its rule (a `PUT`
 * replaces the whole rule).
 * @param {Limit} limit
 * @param {number} max
 * @returns {Record<string, number | string>}
 */
export function limitSpec(limit, max) {
  /** @type {Record<string, number | string>} */
  const body = { max_running: max };
  if (limit.rate != null) body.rate = limit.rate;
  if (limit.per != null) body.per = limit.per;
  if (limit.queue_timeout_secs != null) body.queue_timeout_secs = limit.queue_timeout_secs;
  return body;
}

/**
 * What a queued run is doing: `leaving` (taken out of the queue, being sent), `sent_on` (an
 * operator sent it on: it goes at the queue's next round), or `waiting`.
 * @param {Pick<QueuedRun, 'leaving' | 'skip_queue'>} run
 * @returns {'leaving' | 'sent_on' | 'waiting'}
 */
export function queueState(run) {
  if (run.leaving) return 'leaving';
  return run.skip_queue ? 'sent_on' : 'waiting';
}

/**
 * A queued run's priority as the queue weighs it now: its job's priority when it was queued and
 * a point for each whole minute it has waited.
 * @param {Pick<QueuedRun, 'priority' | 'waited_ms'>} run
 */
export const priorityNow = (run) => run.priority + Math.floor(Math.max(0, run.waited_ms) / 60000);

/** @type {Array<[string, number]>} */
const UNITS = [['d', 86400], ['h', 3600], ['min', 60], ['s', 1]];

/**
 * A wait of `ms` milliseconds in its two largest units, as numbers and unit names
 * (`[[3, 'min'], [20, 's']]`); under a second is `[[0, 's']]`. A unit that is zero is left
 * out after the first (`[[2, 'h']]`, not `[[2, 'h'], [0, 'min']]`).
 * @param {number} ms
 * @returns {Array<[number, string]>}
 */
export function waitParts(ms) {
  let left = Math.max(0, Math.floor((Number(ms) || 0) / 1000));
  /** @type {Array<[number, string]>} */
  const out = [];
  for (const [unit, secs] of UNITS) {
    if (out.length === 2) break;
    const n = Math.floor(left / secs);
    left -= n * secs;
    if (n > 0) out.push([n, unit]);
    else if (out.length) break;
  }
  return out.length ? out : [[0, 's']];
}

/**
 * A wait of `ms` milliseconds in words of the chosen language: `3 min 20 s`, `3分 20秒`.
 * @param {number} ms
 */
export function fmtWait(ms) {
  return waitParts(ms).map(([n, unit]) => t(`dur_${unit}`).replace('{n}', String(n))).join(' ');
}

/**
 * Whether a refresh may put `shown` into an input the user may be editing: not while it has
 * the focus, and not when its value is no longer the one last put there (the user changed it
 * and has not saved yet).
 * @param {{value: string}} input
 * @param {string} lastShown the value the page last put into the input
 * @param {boolean} focused
 */
export const mayRefreshInput = (input, lastShown, focused) => !focused && input.value === lastShown;

/** What a workflow node's concurrency key field shows for "no key" (the API's `""`). */
export const NO_KEY = '-';

/**
 * A workflow node's own priority and concurrency key from its form fields, as the API takes
 * them: a field left empty is left out (the node's job's holds), the key `-` is `""` (no key,
 * though its job has one). A priority that is not a whole number is sent as typed, for the
 * admin to refuse with the field named.
 * @param {string} priority
 * @param {string} key
 * @returns {{priority?: number | string, concurrency_key?: string}}
 */
export function nodeFlow(priority, key) {
  /** @type {{priority?: number | string, concurrency_key?: string}} */
  const out = {};
  const p = priority.trim();
  if (p !== '') out.priority = /^-?\d+$/.test(p) ? Number(p) : p;
  const k = key.trim();
  if (k !== '') out.concurrency_key = k === NO_KEY ? '' : k;
  return out;
}

/**
 * What a workflow node's concurrency key field shows for the node's `concurrency_key`.
 * @param {string | undefined} key
 */
export const shownKey = (key) => (key === undefined ? '' : key === '' ? NO_KEY : key);
