// @ts-check
// The audit log (admins): who did what to which object, in words, with filters.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { fmtTime, localMs } from '../lib/time.js';
import { fieldLabel, errorBox } from '../lib/forms.js';
import { t } from '../i18n.js';

/** What the object of an audited route is, by its collection in the path. @type {Record<string, string>} */
const AUDIT_KINDS = { jobs: 'job', groups: 'group', users: 'user', runs: 'obj_run', me: 'user', workflows: 'workflow', 'workflow-instances': 'wf_instance' };
/** Routes that act rather than create, change or delete, by their last path segment. @type {Record<string, string>} */
const AUDIT_VERBS = { start: 'start', stop: 'stop', trigger: 'run_once', kill: 'kill', clear: 'clear', password: 'change_password', retry: 'retry_node', skip: 'skip_node', succeed: 'succeed_node' };
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
  const fields = req ? Object.keys(req).map(fieldLabel) : [];
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
  const page = (before) => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (fu.value.trim()) q.set('username', fu.value.trim());
    if (fa.value.trim()) q.set('action', fa.value.trim());
    const from = localMs(ff);
    const to = localMs(ft);
    if (from !== undefined) q.set('from', String(from));
    if (to !== undefined) q.set('to', String(to));
    if (before) q.set('before_id', String(before));
    return api('GET', `/v1/audit?${q}`);
  };
  /** @param {any} a */
  const row = (a) => {
    const status = a.detail && a.detail.status;
    const sum = auditSummary(a);
    return h('tr', { 'data-audit': a.id }, h('td', { class: 'at' }, fmtTime(a.at)), h('td', {}, a.username),
      h('td', { class: 'action', title: a.action, 'data-action': a.action }, sum.what), h('td', { class: 'target', title: a.target }, sum.object),
      h('td', { class: status >= 400 ? 'err' : null }, status ? `${status}${status === 403 ? ` ${t('audit_refused')}` : ''}` : ''),
      h('td', { class: 'detail' }, JSON.stringify(a.detail)));
  };
  /** @param {any[]} got @param {boolean} append */
  const show = (got, append) => {
    if (append) body.append(...got.map(row)); else body.replaceChildren(...got.map(row));
    more.hidden = got.length < PAGE;
    if (got.length) last = got[got.length - 1].id;
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
