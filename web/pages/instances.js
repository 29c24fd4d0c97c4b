// @ts-check
// A workflow's instances, newest first, with a state filter.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { go } from '../lib/nav.js';
import { fmtTime } from '../lib/time.js';
import { sel, errorBox } from '../lib/forms.js';
import { autoRefresh } from '../lib/widgets.js';
import { t } from '../i18n.js';

const INSTANCE_STATES = ['queued', 'running', 'succeeded', 'failed', 'stopped', 'skipped'];
const PAGE = 100;

/**
 * `#workflows/instances/ID`.
 * @param {HTMLElement} root
 * @param {string[]} args
 */
export async function instanceList(root, args) {
  const id = Number(args[1]);
  const wf = await api('GET', `/v1/workflows/${id}`);
  const fs = sel('state', [['', `${t('status')}: ${t('all')}`], ...INSTANCE_STATES.map((s) => /** @type {[string, string]} */ ([s, t(`wfs_${s}`)]))], '');
  const body = h('tbody');
  const msg = h('div');
  const more = h('button', { type: 'button', id: 'more-instances', hidden: true }, t('more'));
  const zone = wf.time_zone;
  /** @param {any} i */
  const row = (i) => h('tr', { 'data-instance': i.id }, h('td', {}, h('a', { href: `#workflows/instance/${i.id}` }, i.id)),
    h('td', { class: 'at' }, fmtTime(i.scheduled_at, zone)), h('td', {}, t(i.trigger_type)),
    h('td', { class: 'state', 'data-state': i.state }, h('span', { class: `badge wfs-${i.state}` }, t(`wfs_${i.state}`))),
    h('td', {}, fmtTime(i.finished_at, zone)), h('td', {}, i.stopped_by));
  let drawn = 0;
  /** @type {number | undefined} */
  let last;
  /** @param {number} [before] @param {number} [limit] @returns {Promise<any[]>} */
  const page = (before, limit = PAGE) => {
    const q = new URLSearchParams({ workflow_id: String(id), limit: String(limit) });
    if (fs.value) q.set('state', fs.value);
    if (before) q.set('before_id', String(before));
    return api('GET', `/v1/workflow-instances?${q}`);
  };
  /** @param {any[]} got @param {boolean} append @param {number} asked */
  const show = (got, append, asked) => {
    if (append) body.append(...got.map(row)); else body.replaceChildren(...got.map(row));
    // A full page may have more behind it; the next page starts below its last id.
    more.hidden = got.length < asked;
    if (got.length) last = got[got.length - 1].id;
  };
  // `keep`: an automatic refresh, which reloads as many instances as are shown.
  /** @param {boolean} keep */
  const draw = async (keep) => {
    const seq = ++drawn;
    const limit = keep ? Math.min(1000, Math.max(PAGE, body.children.length)) : PAGE;
    let got;
    try { got = await page(undefined, limit); } catch (e) { if (seq === drawn) msg.replaceChildren(errorBox(e)); return; }
    if (seq !== drawn) return;
    msg.replaceChildren();
    show(got, false, limit);
  };
  more.addEventListener('click', async () => {
    const seq = drawn;
    try { const got = await page(last); if (seq === drawn) show(got, true, PAGE); } catch (e) { msg.replaceChildren(errorBox(e)); }
  });
  fs.addEventListener('change', () => draw(false));
  const trigger = async () => {
    try { const r = await api('POST', `/v1/workflows/${id}/trigger`, { trigger_type: 'MANUAL' }); go(`#workflows/instance/${r.instance_id}`); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  root.replaceChildren(h('h2', {}, `${t('instances')} — #${wf.id} ${wf.name}`),
    h('div', { class: 'filters' }, fs, h('button', { type: 'button', onclick: () => draw(false) }, t('refresh')),
      h('button', { type: 'button', id: 'trigger-workflow', onclick: trigger }, t('trigger_now')),
      h('button', { type: 'button', onclick: () => go(`#workflows/edit/${id}`) }, t('edit')),
      h('span', { class: 'note' }, t('auto_refresh'))), msg,
    h('table', { id: 'wf-instances' }, h('thead', {}, h('tr', {}, ['#', t('scheduled'), t('trigger_type'), t('status'), t('finished_at'), t('stopped_by')].map((x) => h('th', {}, x)))), body),
    more);
  await draw(false);
  autoRefresh(root, draw);
}
