// @ts-check
// The audit log (admins): who did what to which object, in words, with filters.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { fmtTime, localMs } from '../lib/time.js';
import { fieldLabel, errorBox } from '../lib/forms.js';
import { t } from '../i18n.js';

/** What the object of an audited route is, by its collection in the path. @type {Record<string, string>} */
const AUDIT_KINDS = { jobs: 'job', groups: 'group', users: 'user', runs: 'obj_run', me: 'user', workflows: 'workflow', 'workflow-instances': 'wf_instance', 'alarm-channels': 'alarm_channel' };
/** Routes that act rather than create, change or delete, by their last path segment. @type {Record<string, string>} */
const AUDIT_VERBS = { start: 'start', stop: 'stop', trigger: 'run_once', kill: 'kill', clear: 'clear', password: 'change_password', retry: 'retry_node', skip: 'skip_node', succeed: 'succeed_node', test: 'chan_send_test' };
const PAGE = 100;

/**
 * An audit entry in words: what was done (created, changed and which fields, deleted, or the
 * action such as start or kill) and to which object (job #12, group demo). Entries that are
 * not a route (logins) keep their action. The raw route stays in the cell's title.
 * @param {{action?: string, target?: string, detail?: any}} a
 * @returns {{what: string | undefined, object: string | undefined}}
 */
export function auditSummary(a) {
  const m = /^(POST|PUT|PATCH|DELETE) (\/\S*)$/.exec(a.action || '');
  if (!m) return { what: a.action, object: a.target };
  const [, method, pattern] = m;
  const segs = String(a.target || '').split('/').filter(Boolean).map((x) => { try { return decodeURIComponent(x); } catch { return x; } });
  const pat = pattern.split('/').filter(Boolean);
  const kind = AUDIT_KINDS[segs[1]];
  const req = a.detail && a.detail.request && typeof a.detail.request === 'object' ? a.detail.request : null;
  // An edit names the fields it changed (the admin compared the object before and after it);
  // older entries, and other changes, name the fields of the request.
  const changes = auditChanges(a);
  const fields = changes ? Object.keys(changes).map(fieldLabel) : req ? Object.keys(req).map(fieldLabel) : [];
  const named = req && (req.name || req.description || req.app_name || req.username);
  let object = kind ? t(kind) : a.target;
  if (kind && segs[2] && pat[2] && pat[2].startsWith('{')) object += segs[1] === 'groups' ? ` ${segs[2]}` : ` #${segs[2]}`;
  else if (kind && named) object += ` “${named}”`;
  // A workflow node's operation is a parameter of its route (`…/nodes/{node}/{action}`).
  const last = pat[pat.length - 1];
  const verb = AUDIT_VERBS[last === '{action}' ? segs[segs.length - 1] : last];
  let what;
  if (verb) what = t(verb);
  else if (method === 'DELETE') what = t('audit_deleted');
  else if (method === 'POST' && !(pat[2] && pat[2].startsWith('{'))) what = t('audit_created');
  else what = t('audit_changed');
  if (!verb && method !== 'DELETE' && fields.length) what += `: ${fields.join(', ')}`;
  return { what, object };
}

/**
 * The fields an edit changed, `{field: {before, after}}`, when the entry records them.
 * @param {{detail?: any}} a
 * @returns {Record<string, {before: unknown, after: unknown}> | null}
 */
function auditChanges(a) {
  const c = a.detail && a.detail.changes;
  return c && typeof c === 'object' && !Array.isArray(c) ? c : null;
}

/** @param {unknown} v a field's value as the admin stores it */
const shownValue = (v) => (typeof v === 'string' ? (v === '' ? '""' : v) : JSON.stringify(v));

/**
 * An entry's details: each changed field as `Label: before → after`, then the rest (the
 * status, a refusal's reason; the request body when no changes are recorded).
 * @param {{detail?: any}} a
 * @returns {string}
 */
export function auditDetail(a) {
  const changes = auditChanges(a);
  if (!changes) return JSON.stringify(a.detail);
  const lines = Object.entries(changes).map(([k, c]) => `${fieldLabel(k)}: ${shownValue(c.before)} → ${shownValue(c.after)}`);
  const rest = { ...a.detail };
  delete rest.changes;
  delete rest.request;
  return [...lines, JSON.stringify(rest)].join('\n');
}

/**
 * Whether an entry's action, in words or as its route, or its object contains `words`
 * (lower case): the filter finds what the table shows, in either language.
 * @param {any} a @param {string} words
 */
const matches = (a, words) => {
  const sum = auditSummary(a);
  return [a.action, sum.what, sum.object].some((x) => String(x || '').toLowerCase().includes(words));
};

/** Pages of the admin's entries read at most for one page of entries that match the filter. */
const MAX_SCANS = 20;

/** @param {HTMLElement} root */
export async function audit(root) {
  const fu = h('input', { name: 'username', type: 'search', placeholder: t('user') });
  const fa = h('input', { name: 'action', type: 'search', placeholder: t('action') });
  const ff = h('input', { name: 'from', type: 'datetime-local', step: '1' });
  const ft = h('input', { name: 'to', type: 'datetime-local', step: '1' });
  const body = h('tbody');
  const msg = h('div');
  const more = h('button', { type: 'button', id: 'more-audit', hidden: true }, t('more'));
  let drawn = 0;
  /** @type {number | undefined} */
  let last;
  /** @param {number} [before] @returns {Promise<any[]>} */
  const fetchPage = (before) => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (fu.value.trim()) q.set('username', fu.value.trim());
    const from = localMs(ff);
    const to = localMs(ft);
    if (from !== undefined) q.set('from', String(from));
    if (to !== undefined) q.set('to', String(to));
    if (before) q.set('before_id', String(before));
    return api('GET', `/v1/audit?${q}`);
  };
  // The action filter matches the words the table shows, which the admin does not know:
  // the entries are read a page at a time (newest first) and those that match kept, until a
  // page of them is found or the log ends.
  /** @param {number} [before] @returns {Promise<{rows: any[], cursor: number | undefined, end: boolean}>} */
  const page = async (before) => {
    const words = fa.value.trim().toLowerCase();
    /** @type {any[]} */
    const rows = [];
    let cursor = before;
    for (let i = 0; i < MAX_SCANS; i++) {
      const got = await fetchPage(cursor);
      if (got.length) cursor = got[got.length - 1].id;
      rows.push(...(words ? got.filter((a) => matches(a, words)) : got));
      if (got.length < PAGE) return { rows, cursor, end: true };
      if (rows.length >= PAGE) break;
    }
    return { rows, cursor, end: false };
  };
  /** @param {any} a */
  const row = (a) => {
    const status = a.detail && a.detail.status;
    const sum = auditSummary(a);
    return h('tr', { 'data-audit': a.id }, h('td', { class: 'at' }, fmtTime(a.at)), h('td', {}, a.username),
      h('td', { class: 'action', title: a.action, 'data-action': a.action }, sum.what), h('td', { class: 'target', title: a.target }, sum.object),
      h('td', { class: status >= 400 ? 'err' : null }, status ? `${status}${status === 403 ? ` ${t('audit_refused')}` : ''}` : ''),
      h('td', { class: 'detail' }, auditDetail(a)));
  };
  /** @param {{rows: any[], cursor: number | undefined, end: boolean}} got @param {boolean} append */
  const show = (got, append) => {
    if (append) body.append(...got.rows.map(row)); else body.replaceChildren(...got.rows.map(row));
    more.hidden = got.end;
    last = got.cursor;
  };
  const draw = async () => {
    const seq = ++drawn;
    msg.replaceChildren();
    let got;
    try { got = await page(); } catch (e) { if (seq === drawn) msg.replaceChildren(errorBox(e)); return; }
    if (seq === drawn) show(got, false);
  };
  more.addEventListener('click', async () => {
    const seq = drawn;
    try { const got = await page(last); if (seq === drawn) show(got, true); } catch (e) { msg.replaceChildren(errorBox(e)); }
  });
  for (const el of [fu, fa]) el.addEventListener('input', draw);
  for (const el of [ff, ft]) el.addEventListener('change', draw);
  root.replaceChildren(h('h2', {}, t('audit')),
    h('div', { class: 'filters' }, fu, fa, h('label', {}, h('span', {}, t('from')), ff), h('label', {}, h('span', {}, t('to')), ft),
      h('button', { type: 'button', onclick: draw }, t('refresh'))), msg,
    h('table', { id: 'audit' }, h('thead', {}, h('tr', {}, [t('at'), t('user'), t('action'), t('target'), t('response'), t('details')].map((x) => h('th', {}, x)))), body),
    more);
  await draw();
}
