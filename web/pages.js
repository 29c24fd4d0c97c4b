// The console's pages. Each is `async (root, args) => void` and builds DOM with `h` only.
import { h, api, state, options, fmtTime, getZoneMode, fieldLabel, errorBox, showError, clearErrors, go } from './app.js';
import { t } from './i18n.js';

const DAY = 86400000;
export const field = (label, input, help) => h('label', {}, h('span', {}, t(label)), input, help || '');
export const sel = (name, options, value) => h('select', { name }, options.map(([v, l]) => h('option', { value: v, selected: String(v) === String(value) ? true : null }, l)));
export const num = (v) => (v === '' || v === undefined ? undefined : Number(v));

async function groupsList() { return api('GET', '/v1/groups'); }

/** Text with XXL-JOB's `<br>` separators and newlines as line breaks, built from text nodes. */
export function lines(text) {
  const out = [];
  String(text ?? '').split(/<br\s*\/?>|\n/i).forEach((part, i) => { if (i) out.push(h('br')); out.push(part); });
  return out;
}

const dayInput = (name, ms) => h('input', { name, id: `range-${name}`, type: 'date', value: new Date(ms).toISOString().slice(0, 10) });

async function dashboard(root) {
  const today = Date.now() - (Date.now() % DAY);
  const fromIn = dayInput('from', today - 13 * DAY);
  const toIn = dayInput('to', today);
  const out = h('div');
  const msg = h('div');
  let drawn = 0;
  const draw = async () => {
    // Filters fire quickly; only the newest request may render.
    const seq = ++drawn;
    msg.replaceChildren();
    const from = Date.parse(fromIn.value); const to = Date.parse(toIn.value) + DAY;
    let s;
    try { s = await api('GET', `/v1/stats?from=${from}&to=${to}`); } catch (e) { msg.replaceChildren(errorBox(e)); return; }
    if (seq !== drawn) return;
    const card = (k, v) => h('div', { class: 'card' }, h('div', {}, t(k)), h('div', { class: 'stat', 'data-stat': k }, v));
    const sum = (k) => s.days.reduce((a, d) => a + d[k], 0);
    const max = Math.max(1, ...s.days.map((d) => d.success + d.failed + d.running));
    const bar = (d) => h('div', { class: 'bar', 'data-day': new Date(d.day).toISOString().slice(0, 10), title: `${new Date(d.day).toISOString().slice(0, 10)}: ${t('success')} ${d.success}, ${t('failed')} ${d.failed}, ${t('running')} ${d.running}` },
      h('small', {}, new Date(d.day).getUTCDate()),
      h('div', { class: 's', 'data-h': d.success }), h('div', { class: 'f', 'data-h': d.failed }), h('div', { class: 'r', 'data-h': d.running }));
    const bars = h('div', { class: 'bars', id: 'chart' }, s.days.map(bar));
    // Heights through the CSSOM (style attributes would need 'unsafe-inline' under the CSP).
    // Percentages of the bar's column, less the day label: the chart fills its card at any size.
    for (const el of bars.querySelectorAll('[data-h]')) el.style.height = `calc((100% - 16px) * ${Number(el.dataset.h) / max})`;
    const legend = h('div', { class: 'legend' }, h('span', { class: 'key s' }), t('success'), h('span', { class: 'key f' }), t('failed'), h('span', { class: 'key r' }), t('running'));
    out.replaceChildren(
      h('div', { class: 'cards' }, card('groups', s.groups), card('jobs', s.jobs), card('running_jobs', s.running_jobs),
        card('live_executors', s.executors), card('runs_in_range', sum('success') + sum('failed') + sum('running') + sum('skipped')),
        card('success', sum('success')), card('failed', sum('failed')), card('running', sum('running')),
        card('lateness_now', s.lateness.current_seconds.toFixed(1)), card('lateness', s.lateness.mean_seconds.toFixed(3))),
      h('div', { class: 'card' }, h('h3', {}, t('runs_per_day')), legend, bars));
  };
  for (const el of [fromIn, toIn]) el.addEventListener('change', draw);
  // Presets: the last N days up to today (UTC days, as the chart counts them).
  const preset = (days, label) => h('button', { type: 'button', id: `preset-${days}`, class: 'preset', onclick: () => {
    const now = Date.now() - (Date.now() % DAY);
    fromIn.value = new Date(now - (days - 1) * DAY).toISOString().slice(0, 10);
    toIn.value = new Date(now).toISOString().slice(0, 10);
    draw();
  } }, t(label));
  root.replaceChildren(h('h2', {}, t('dashboard')),
    h('div', { class: 'filters' }, preset(1, 'today'), preset(7, 'days_7'), preset(30, 'days_30'), field('from', fromIn), field('to', toIn), h('button', { type: 'button', id: 'refresh', onclick: draw }, t('refresh'))), msg, out);
  await draw();
}

async function executors(root) {
  const [groups, live] = await Promise.all([groupsList(), api('GET', '/v1/executors')]);
  const liveOf = (id) => (live.find((g) => g.group_id === id) || { executors: [] }).executors;
  const form = (g) => {
    const app = h('input', { name: 'app_name', value: g ? g.app_name : '' });
    const title = h('input', { name: 'title', value: g ? g.title : '' });
    const addrs = h('input', { name: 'addresses', value: g ? g.addresses.join(',') : '', placeholder: 'http://host:port,…' });
    // Chime executors send each finished run's log; kept here, it outlives the executor.
    const keep = h('input', { name: 'keep_logs', type: 'checkbox', checked: g ? g.keep_logs : true });
    // XXL-JOB's "no token" setup, for legacy executors only: off unless an admin turns it on.
    const tokenless = h('input', { name: 'insecure_no_token', type: 'checkbox', checked: g ? g.insecure_no_token : false });
    const msg = h('div');
    return h('form', { class: 'card', id: 'group-form', onsubmit: async (ev) => {
      ev.preventDefault();
      const list = addrs.value.split(',').map((a) => a.trim()).filter(Boolean);
      const body = { app_name: app.value, title: title.value || undefined, addresses: list, address_type: list.length ? 'manual' : 'auto', keep_logs: keep.checked, insecure_no_token: tokenless.checked };
      try { g ? await api('PUT', `/v1/groups/${g.id}`, body) : await api('POST', '/v1/groups', body); go('#executors'); } catch (e) { showError(ev.target, msg, e); }
    } }, field('app_name', app), field('title', title), field('addresses', addrs), field('keep_logs', keep), field('insecure_no_token', tokenless, t('insecure_no_token_help')), h('button', { type: 'submit' }, t('save')), msg);
  };
  const slot = h('div');
  // Groups are the admins' to change: a group's addresses receive the executor access token,
  // which every group shares (the server refuses others anyway).
  root.replaceChildren(h('h2', {}, t('executors')),
    state.me.admin ? h('button', { id: 'add-group', onclick: () => slot.replaceChildren(form(null)) }, t('add')) : h('p', { class: 'note', id: 'groups-note' }, t('groups_admin_only')), slot,
    h('table', { id: 'groups' }, h('tr', {}, [t('app_name'), t('title'), t('addresses'), t('last_heartbeat'), t('address_type'), ''].map((x) => h('th', {}, x))),
      groups.map((g) => h('tr', { 'data-app': g.app_name }, h('td', {}, g.app_name,
        g.insecure_no_token ? h('span', { class: 'no-token', title: t('insecure_no_token_help') }, ` (${t('no_token')})`) : ''), h('td', {}, g.title),
        // A manual address has no heartbeat: the admin asked it (`/beat`) for this list.
        h('td', {}, liveOf(g.id).map((e) => h('div', { class: 'address' }, e.address,
          e.linked ? h('span', { class: 'linked', title: t('linked_hint') }, ` (${t('linked')})`) : '',
          e.answers == null ? '' : h('span', { class: `answers ${e.answers ? 'yes' : 'no'}` }, ` (${t(e.answers ? 'address_answers' : 'address_silent')})`)))),
        h('td', {}, liveOf(g.id).map((e) => h('div', {}, fmtTime(e.last_heartbeat)))),
        h('td', { class: 'address-type', 'data-type': g.address_type }, t(g.address_type === 'manual' ? 'address_manual' : 'address_auto_reg')),
        h('td', {}, state.me.admin ? [h('button', { onclick: () => slot.replaceChildren(form(g)) }, t('edit')),
          h('button', { onclick: async () => { if (confirm(t('confirm_delete'))) { try { await api('DELETE', `/v1/groups/${g.id}`); go('#executors'); } catch (e) { slot.replaceChildren(errorBox(e)); } } } }, t('remove'))] : '')))));
}

export function previewer(typeSel, exprIn, tzIn, out) {
  let timer;
  let asked = 0;
  const update = () => {
    clearTimeout(timer);
    // A finding is about the schedule as it is now: clear the old one at once, so a fixed
    // zone or expression never leaves an error behind that blocks saving.
    for (const el of [exprIn, tzIn]) el.setCustomValidity('');
    const seq = ++asked;
    timer = setTimeout(async () => {
      if (typeSel.value === 'NONE') { out.replaceChildren(); return; }
      // The zone applies to CRON only (its field is hidden otherwise).
      const q = new URLSearchParams({ type: typeSel.value, expr: exprIn.value, tz: typeSel.value === 'CRON' ? tzIn.value : '', count: '5' });
      try {
        const p = await api('GET', `/v1/schedule/preview?${q}`);
        if (seq !== asked) return;
        // The console's one date format, in the zone chosen in the top bar (the job's by default).
        out.replaceChildren(h('div', { class: 'ok' }, `${t('next_fires')} (${p.time_zone})`),
          h('ol', { id: 'preview' }, p.next.map((n) => h('li', { 'data-local': n.local }, fmtTime(n.at, p.time_zone), n.dst_shift ? h('span', { class: 'dst' }, ` ⚠ ${t('dst')} (UTC${n.utc_offset_secs >= 0 ? '+' : '-'}${Math.abs(n.utc_offset_secs / 3600)})`) : ''))));
      } catch (e) {
        if (seq !== asked) return;
        // Mark the field at fault (the zone or the expression), never a hidden one.
        const at = e.field === 'time_zone' ? tzIn : exprIn;
        if (!at.closest('label').hidden) at.setCustomValidity(e.message);
        out.replaceChildren(errorBox(e));
      }
    }, 250);
  };
  for (const el of [typeSel, exprIn, tzIn]) el.addEventListener('input', update);
  update();
}

// Starting points for new GLUE jobs.
const GLUE_TEMPLATES = {
  GLUE_SHELL: '#!/bin/bash\necho "hello from Chime"\necho "param: $1"\nexit 0\n',
  GLUE_PYTHON: '#!/usr/bin/env python3\nimport sys\nprint("hello from Chime, param:", sys.argv[1] if len(sys.argv) > 1 else "")\n',
  GLUE_NODEJS: '#!/usr/bin/env node\nconsole.log("hello from Chime, param:", process.argv[2] || "");\n',
  GLUE_PHP: '<?php\necho "hello from Chime\\n";\n',
  GLUE_POWERSHELL: 'Write-Host "hello from Chime"\n',
  GLUE_GROOVY: 'println "hello from Chime"\n',
};

/** Whether the current user may operate jobs of group `id` (the server checks it again). */
const operates = (id) => state.me.admin || (state.me.can_write && state.me.group_ids.includes(id));

/**
 * A select of one job enum built from the admin's values (`/v1/options`), with translated names
 * (`prefix_VALUE`) and a line explaining the chosen value (`prefix_VALUE_help`). A value the
 * admin does not list (it cannot happen today) is kept rather than silently replaced.
 */
export function optSelect(name, choices, prefix, value) {
  const list = [...choices];
  if (value && !list.some((c) => c.value === value)) list.push({ value, title: value });
  const s = h('select', { name, 'aria-describedby': `help-${name}` },
    list.map((c) => h('option', { value: c.value, selected: c.value === value ? true : null, title: optHelp(prefix, c.value) }, optName(prefix, c.value, c.title))));
  const help = h('small', { class: 'help', id: `help-${name}` });
  const explain = () => { help.textContent = optHelp(prefix, s.value); };
  s.addEventListener('change', explain);
  explain();
  return { select: s, help };
}
/** The translated name of an enum value, else the admin's English title, else the value. */
export function optName(prefix, value, title) { const k = `${prefix}_${value}`; return t(k) === k ? (title || value) : t(k); }
function optHelp(prefix, value) { const k = `${prefix}_${value}_help`; return t(k) === k ? '' : t(k); }

/**
 * The handler field's suggestions for group `groupId`: the handlers its Chime executors say they
 * run (in their registrations), and the names its jobs already use.
 */
async function suggestedHandlers(groupId) {
  if (!groupId) return [];
  const [jobs, groups] = await Promise.all([
    api('GET', `/v1/jobs?group_id=${groupId}&limit=1000`),
    api('GET', `/v1/executors?group=${groupId}`).catch(() => []),
  ]);
  const names = jobs.map((j) => j.handler);
  for (const g of groups) for (const e of g.executors || []) names.push(...(e.handlers || []));
  return [...new Set(names.filter(Boolean))].sort();
}

async function jobForm(root, job, groups, jobs) {
  const o = await options();
  const j = job || { schedule_type: 'CRON', schedule_expr: '0 * * * * ?', time_zone: '', glue_type: 'BEAN', route_strategy: 'FIRST', block_strategy: 'SERIAL_EXECUTION', misfire_strategy: 'DO_NOTHING', retry_count: 0, timeout_secs: 0, child_job_ids: [] };
  // Child jobs run in their own group, so only jobs the user may operate are offered. A child
  // an admin linked from another group stays selected (by id: its name is not ours to see).
  const offered = jobs.filter((x) => operates(x.group_id) && (!job || x.id !== job.id));
  const foreign = (job && job.id ? j.child_job_ids : []).filter((id) => !offered.some((x) => x.id === id));
  const enumField = (name, key, prefix) => optSelect(name, o[key], prefix, j[name]);
  const st = enumField('schedule_type', 'schedule_types', 'sched');
  const mf = enumField('misfire_strategy', 'misfire_strategies', 'misfire');
  const rs = enumField('route_strategy', 'route_strategies', 'route');
  const bs = enumField('block_strategy', 'block_strategies', 'block');
  const gt = state.me.admin ? enumField('glue_type', 'glue_types', 'glue') : null;
  const handlers = h('datalist', { id: 'handler-names' });
  const f = {
    group_id: sel('group_id', groups.filter((g) => operates(g.id)).map((g) => [g.id, g.app_name]), j.group_id),
    description: h('input', { name: 'description', value: j.description || '' }),
    // The job's stable name in its group (jobs as code match on it); empty: `job-<id>`.
    key: h('input', { name: 'key', value: j.key || '', placeholder: t('key_hint') }),
    owner: h('input', { name: 'owner', value: j.owner || '' }),
    alarm_contacts: h('input', { name: 'alarm_contacts', value: j.alarm_contacts || '', placeholder: 'ops@example.com, …' }),
    schedule_type: st.select,
    schedule_expr: h('input', { name: 'schedule_expr', value: j.schedule_expr || '' }),
    time_zone: h('input', { name: 'time_zone', value: j.time_zone || '', placeholder: 'UTC, Asia/Shanghai…' }),
    handler: h('input', { name: 'handler', value: j.handler || '', list: 'handler-names', autocomplete: 'off', title: t('handler_suggest') }),
    param: h('input', { name: 'param', value: j.param || '' }),
    route_strategy: rs.select,
    block_strategy: bs.select,
    misfire_strategy: mf.select,
    retry_count: h('input', { name: 'retry_count', type: 'number', value: j.retry_count }),
    timeout_secs: h('input', { name: 'timeout_secs', type: 'number', value: j.timeout_secs }),
    child_job_ids: h('select', { name: 'child_job_ids', multiple: true },
      offered.map((x) => h('option', { value: x.id, selected: j.child_job_ids.includes(x.id) ? true : null }, `${x.id} ${x.description}`)),
      foreign.map((id) => h('option', { value: id, selected: true }, `#${id}`))),
  };
  const glue = gt ? gt.select : null;
  const preview = h('div', { id: 'preview-box' });
  const msg = h('div');
  // Alarm e-mails need an SMTP server on the admin: say so while the field has addresses.
  const smtpNote = h('p', { class: 'warn', id: 'smtp-warning', role: 'status', hidden: true }, t('no_smtp'));
  const smtpCheck = () => { smtpNote.hidden = o.alarm_email || !f.alarm_contacts.value.trim(); };
  f.alarm_contacts.addEventListener('input', smtpCheck);
  smtpCheck();
  const suggest = async () => {
    try { handlers.replaceChildren(...(await suggestedHandlers(f.group_id.value)).map((n) => h('option', { value: n }))); } catch { handlers.replaceChildren(); }
  };
  f.group_id.addEventListener('change', suggest);
  suggest();
  const row = (k, extra) => field(k === 'group_id' ? 'group' : k, f[k], extra);
  const section = (key, ...rows) => h('fieldset', { class: 'sec', 'data-section': key }, h('legend', {}, t(`sec_${key}`)), rows);
  const form = h('form', { class: 'card job-form', id: 'job-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const cron = f.schedule_type.value === 'CRON';
    const body = {
      group_id: num(f.group_id.value), description: f.description.value, key: f.key.value.trim() || undefined, owner: f.owner.value, alarm_contacts: f.alarm_contacts.value,
      schedule_type: f.schedule_type.value, schedule_expr: f.schedule_expr.value,
      // The zone applies to CRON only; left out, a job keeps the one it has.
      time_zone: cron && f.time_zone.value ? f.time_zone.value : undefined, handler: f.handler.value, param: f.param.value,
      route_strategy: f.route_strategy.value, block_strategy: f.block_strategy.value, misfire_strategy: f.misfire_strategy.value,
      retry_count: num(f.retry_count.value), timeout_secs: num(f.timeout_secs.value),
      child_job_ids: [...f.child_job_ids.selectedOptions].map((x) => Number(x.value)),
    };
    if (glue) {
      body.glue_type = glue.value;
      // A new GLUE job (or one changing language) starts from a template, edited in the script editor.
      if (glue.value !== 'BEAN' && !(job && job.id && job.glue_type === glue.value)) body.glue_source = (job && job.glue_type === glue.value && job.glue_source) || GLUE_TEMPLATES[glue.value] || '';
    }
    clearErrors(form); msg.replaceChildren();
    try { job && job.id ? await api('PUT', `/v1/jobs/${job.id}`, body) : await api('POST', '/v1/jobs', body); go('#jobs'); } catch (e) { showError(form, msg, e); }
  } },
  section('basics', row('group_id'), glue ? field('glue_type', glue, gt.help) : '', row('description'), row('key'), row('owner')),
  section('schedule', row('schedule_type', st.help), row('schedule_expr'), row('time_zone'), preview, row('misfire_strategy', mf.help)),
  section('executor', row('handler'), handlers, row('param'), row('route_strategy', rs.help), row('block_strategy', bs.help), row('timeout_secs')),
  section('alarms', row('retry_count'), row('alarm_contacts'), smtpNote),
  section('advanced', row('child_job_ids')),
  h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('save')), h('button', { type: 'button', onclick: () => go('#jobs') }, t('cancel'))), msg);
  root.replaceChildren(h('h2', {}, job && job.id ? `${t('jobs')} — #${job.id} ${job.description}` : t('new_job')), form);
  previewer(f.schedule_type, f.schedule_expr, f.time_zone, preview);
  // Show only the fields that apply: no expression without a schedule, no handler for GLUE.
  const toggle = () => {
    f.schedule_expr.closest('label').hidden = f.schedule_type.value === 'NONE';
    f.time_zone.closest('label').hidden = f.schedule_type.value !== 'CRON';
    f.handler.closest('label').hidden = !!glue && glue.value !== 'BEAN';
  };
  f.schedule_type.addEventListener('change', toggle);
  if (glue) glue.addEventListener('change', toggle);
  toggle();
}

/** The schedule of a job as the lists show it: the translated type and the expression. */
export const scheduleText = (j) => (j.schedule_type === 'NONE' ? optName('sched', 'NONE') : `${optName('sched', j.schedule_type)} ${j.schedule_expr}`);

/**
 * A row's actions in one menu (a `<details>` pop-up), so a row keeps one line however many
 * actions it has. Each item is `[label, fn]`; the menu closes when one is chosen.
 */
export function actionMenu(items) {
  const menu = h('details', { class: 'menu' }, h('summary', { title: t('actions') }, `${t('actions')} ▾`));
  const list = h('div', { class: 'menu-items' });
  for (const it of items.filter(Boolean)) {
    const [label, fn] = it;
    list.append(h('button', { type: 'button', 'data-action': label, onclick: () => { menu.open = false; fn(); } }, t(label)));
  }
  menu.append(list);
  return menu;
}

/**
 * "Run once": the parameter of this run and, optionally, the executor to send it to (by
 * default the job's route strategy picks one). Resolves to the body to send, or null.
 */
async function runOnceDialog(j) {
  let live = [];
  try { live = ((await api('GET', `/v1/executors?group=${j.group_id}`))[0] || { executors: [] }).executors; } catch { /* the route strategy still works */ }
  return new Promise((resolve) => {
    const param = h('textarea', { name: 'param', rows: '3', value: j.param || '' });
    const addr = sel('address', [['', t('address_auto')], ...live.map((e) => [e.address, e.address])], '');
    const dlg = h('dialog', { id: 'run-once', class: 'card' });
    const done = (v) => { dlg.close(); dlg.remove(); resolve(v); };
    dlg.append(h('form', { method: 'dialog', onsubmit: (ev) => { ev.preventDefault(); done({ param: param.value, address: addr.value || undefined, trigger_type: 'MANUAL' }); } },
      h('h3', {}, `${t('run_once')} — #${j.id} ${j.description}`),
      field('param_prompt', param), field('address', addr),
      h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('run')), h('button', { type: 'button', onclick: () => done(null) }, t('cancel')))));
    dlg.addEventListener('cancel', () => done(null));
    document.body.append(dlg);
    dlg.showModal();
  });
}

const JOB_PAGE = 50;
const REFRESH_MS = 10000;

/** Refreshes `draw` every [`REFRESH_MS`] while `root` shows this page and the tab is visible. */
export function autoRefresh(root, draw) {
  const here = location.hash;
  const timer = setInterval(() => {
    if (location.hash !== here || !root.isConnected) { clearInterval(timer); return; }
    // An open menu or dialog is the user's: redrawing would close it.
    if (document.hidden || root.querySelector('details.menu[open]') || document.querySelector('dialog[open]')) return;
    draw(true);
  }, REFRESH_MS);
}

async function jobs(root, args) {
  const groups = await groupsList();
  if (args[0] === 'new' || args[0] === 'edit' || args[0] === 'copy') {
    const [job, list] = await Promise.all([args[1] ? api('GET', `/v1/jobs/${Number(args[1])}`) : null, api('GET', '/v1/jobs')]);
    // A copy is the job without its id: the form saves it as a new job.
    return jobForm(root, args[0] === 'copy' ? { ...job, id: undefined, key: undefined, description: `${job.description} ${t('copy_suffix')}` } : job, groups, list);
  }
  await options();
  const fg = sel('group', [['', `${t('group')}: ${t('all')}`], ...groups.map((g) => [g.id, g.app_name])], '');
  const fs = sel('status', [['', `${t('status')}: ${t('all')}`], ['true', t('started')], ['false', t('stopped')]], '');
  const fh = h('input', { name: 'handler', type: 'search', placeholder: t('handler') });
  const fd = h('input', { name: 'description', type: 'search', placeholder: t('description') });
  const fo = h('input', { name: 'owner', type: 'search', placeholder: t('owner') });
  const body = h('tbody');
  const msg = h('div');
  const pageNo = h('span', { id: 'job-page' });
  const prev = h('button', { type: 'button', id: 'jobs-prev' }, t('prev'));
  const next = h('button', { type: 'button', id: 'jobs-next' }, t('next'));
  const gname = (id) => (groups.find((g) => g.id === id) || {}).app_name || id;
  let offset = 0;
  let sort = 'id';
  let desc = false;
  let drawn = 0;
  const act = (fn) => async () => { try { await fn(); draw(true); } catch (e) { msg.replaceChildren(errorBox(e)); } };
  const row = (j) => h('tr', { 'data-job': j.id },
    h('td', {}, j.id), h('td', {}, gname(j.group_id)), h('td', { class: 'desc' }, j.description), h('td', { class: 'owner' }, j.owner),
    h('td', { class: 'schedule' }, scheduleText(j)),
    h('td', {}, j.glue_type === 'BEAN' ? j.handler : optName('glue', j.glue_type)), h('td', { class: j.running ? 'status ok' : 'status' }, j.running ? `▶ ${t('started')}` : `■ ${t('stopped')}`),
    h('td', { class: 'next-fire' }, j.running && j.next_fire_at > 0 ? fmtTime(j.next_fire_at, j.time_zone) : ''),
    h('td', { class: 'row-actions' }, h('a', { href: `#runs/job/${j.id}`, class: 'job-runs', title: t('job_runs') }, t('runs')), ' ', state.me.can_write && operates(j.group_id) ? actionMenu([
      j.running ? ['stop', act(() => api('POST', `/v1/jobs/${j.id}/stop`))] : ['start', act(() => api('POST', `/v1/jobs/${j.id}/start`))],
      ['run_once', act(async () => { const b = await runOnceDialog(j); if (b) { const r = await api('POST', `/v1/jobs/${j.id}/trigger`, b); go(`#runs/${r.run_id}`); } })],
      ['edit', () => go(`#jobs/edit/${j.id}`)],
      ['copy', () => go(`#jobs/copy/${j.id}`)],
      state.me.admin && j.glue_type !== 'BEAN' ? ['script', () => go(`#script/${j.id}`)] : null,
      ['remove', act(async () => { if (confirm(t('confirm_delete'))) await api('DELETE', `/v1/jobs/${j.id}`); })],
    ]) : ''));
  // The server filters, sorts and pages; one more job than a page says whether a next one exists.
  const draw = async (keep) => {
    const seq = ++drawn;
    if (!keep) offset = 0;
    const q = new URLSearchParams({ sort, order: desc ? 'desc' : 'asc', offset: String(offset), limit: String(JOB_PAGE + 1) });
    if (fg.value) q.set('group_id', fg.value);
    if (fs.value) q.set('running', fs.value);
    for (const [k, el] of [['handler', fh], ['description', fd], ['owner', fo]]) if (el.value.trim()) q.set(k, el.value.trim());
    let got;
    try { got = await api('GET', `/v1/jobs?${q}`); } catch (e) { if (seq === drawn) msg.replaceChildren(errorBox(e)); return; }
    if (seq !== drawn) return;
    msg.replaceChildren();
    body.replaceChildren(...got.slice(0, JOB_PAGE).map(row));
    prev.disabled = offset === 0; next.disabled = got.length <= JOB_PAGE;
    pageNo.textContent = `${t('page')} ${offset / JOB_PAGE + 1}`;
  };
  prev.addEventListener('click', () => { offset = Math.max(0, offset - JOB_PAGE); draw(true); });
  next.addEventListener('click', () => { offset += JOB_PAGE; draw(true); });
  for (const el of [fg, fs, fh, fd, fo]) el.addEventListener('input', () => draw(false));
  // Column headers that sort: click once ascending, again descending.
  const th = (label, key) => {
    if (!key) return h('th', {}, label);
    const cell = h('th', { class: 'sortable', 'data-sort': key, 'aria-sort': sort === key ? (desc ? 'descending' : 'ascending') : null },
      h('button', { type: 'button', class: 'link', onclick: () => { if (sort === key) desc = !desc; else { sort = key; desc = false; } mark(); draw(false); } }, label, h('span', { class: 'arrow' })));
    return cell;
  };
  const head = h('tr', {}, th('#', 'id'), th(t('group'), 'group_id'), th(t('description'), 'description'), th(t('owner'), 'owner'), th(t('schedule')),
    th(t('handler'), 'handler'), th(t('status')), th(t('next_fire'), 'next_fire_at'), th(''));
  const mark = () => {
    for (const c of head.querySelectorAll('th.sortable')) {
      const on = c.dataset.sort === sort;
      if (on) c.setAttribute('aria-sort', desc ? 'descending' : 'ascending'); else c.removeAttribute('aria-sort');
      c.querySelector('.arrow').textContent = on ? (desc ? ' ▼' : ' ▲') : '';
    }
  };
  mark();
  root.replaceChildren(h('h2', {}, t('jobs')), h('div', { class: 'filters' }, fg, fs, fh, fd, fo,
    state.me.can_write ? h('button', { id: 'new-job', type: 'button', onclick: () => go('#jobs/new') }, t('add')) : '',
    h('span', { class: 'note' }, t('auto_refresh'))), msg,
  h('table', { id: 'jobs' }, h('thead', {}, head), body),
  h('div', { class: 'pager' }, prev, pageNo, next));
  await draw(false);
  autoRefresh(root, draw);
}

// Keywords per GLUE language; everything else is shown as plain text.
const KEYWORDS = {
  shell: 'if then else elif fi for do done while until case esac in function return local export readonly echo exit set unset shift source',
  python: 'def return if elif else for while in not and or is None True False import from as class try except finally raise with lambda pass break continue yield global print',
  js: 'function return if else for while do in of const let var new class try catch finally throw typeof instanceof async await import export from null undefined true false this switch case break continue',
};
const LANG = { GLUE_SHELL: 'shell', GLUE_PYTHON: 'python', GLUE_NODEJS: 'js', GLUE_PHP: 'js', GLUE_GROOVY: 'js', GLUE_POWERSHELL: 'shell' };

/**
 * Highlights keywords, strings and comments of `src`. Tokens become text nodes inside spans,
 * so source text is never parsed as HTML.
 */
export function highlight(src, glueType) {
  const lang = LANG[glueType] || 'shell';
  const comment = lang === 'js' ? String.raw`\/\/[^\n]*|\/\*[\s\S]*?\*\/` : String.raw`#[^\n]*`;
  const dq = String.raw`"(?:\\.|[^"\\\n])*"`;
  const sq = String.raw`'(?:\\.|[^'\\\n])*'`;
  const str = lang === 'python' ? [String.raw`"""[\s\S]*?"""`, String.raw`'''[\s\S]*?'''`, dq, sq].join('|')
    : lang === 'js' ? [dq, sq, String.raw`\x60(?:\\.|[^\x60\\])*\x60`].join('|')
      : [dq, String.raw`'[^']*'`].join('|');
  const kw = `\\b(?:${KEYWORDS[lang].split(' ').join('|')})\\b`;
  const re = new RegExp(`(${comment})|(${str})|(${kw})`, 'g');
  const out = h('pre', { class: 'code', id: 'highlighted' });
  let last = 0; let m;
  while ((m = re.exec(src))) {
    out.append(src.slice(last, m.index));
    out.append(h('span', { class: m[1] ? 'cm' : m[2] ? 'str' : 'kw' }, m[0]));
    last = re.lastIndex;
  }
  out.append(src.slice(last));
  return out;
}

/** Line diff of `a` (old) and `b` (new) by longest common subsequence. */
export function diffLines(a, b) {
  const A = a.split('\n'); const B = b.split('\n');
  const out = h('pre', { class: 'code diff', id: 'diff' });
  if (A.length * B.length > 4e6) { out.append(t('too_long_to_diff')); return out; }
  // L[i][j]: number of common lines of A[i..] and B[j..].
  const L = Array.from({ length: A.length + 1 }, () => new Uint32Array(B.length + 1));
  for (let i = A.length - 1; i >= 0; i--) {
    for (let j = B.length - 1; j >= 0; j--) L[i][j] = A[i] === B[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  }
  let i = 0; let j = 0;
  while (i < A.length || j < B.length) {
    if (i < A.length && j < B.length && A[i] === B[j]) { out.append(h('div', {}, `  ${A[i]}`)); i++; j++; }
    else if (i < A.length && (j === B.length || L[i + 1][j] >= L[i][j + 1])) { out.append(h('div', { class: 'del' }, `- ${A[i]}`)); i++; }
    else { out.append(h('div', { class: 'add' }, `+ ${B[j]}`)); j++; }
  }
  return out;
}

async function script(root, args) {
  const id = Number(args[0]);
  const [job, versions] = await Promise.all([api('GET', `/v1/jobs/${id}`), api('GET', `/v1/jobs/${id}/glue`)]);
  const ta = h('textarea', { class: 'src', name: 'glue_source', spellcheck: 'false', value: job.glue_source });
  const view = h('div', { id: 'script-view' });
  const msg = h('div');
  const show = () => view.replaceChildren(highlight(ta.value, job.glue_type));
  ta.addEventListener('input', show); show();
  // Tab inserts a tab instead of leaving the editor.
  ta.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Tab' || ev.shiftKey) return;
    ev.preventDefault();
    ta.setRangeText('\t', ta.selectionStart, ta.selectionEnd, 'end'); show();
  });
  root.replaceChildren(h('h2', {}, `${t('script')} — #${job.id} ${job.description} (${job.glue_type})`), ta, view,
    h('button', { type: 'button', id: 'save-script', onclick: async () => { try { await api('PATCH', `/v1/jobs/${id}`, { glue_source: ta.value }); go(`#script/${id}`); } catch (e) { msg.replaceChildren(errorBox(e)); } } }, t('save')),
    h('button', { type: 'button', onclick: () => go('#jobs') }, t('cancel')), msg,
    h('h3', {}, t('history')), versions.length ? '' : h('p', {}, t('none')),
    h('table', { id: 'versions' }, versions.map((v) => h('tr', { 'data-version': v.id }, h('td', {}, fmtTime(v.created_at, job.time_zone)), h('td', {}, v.author), h('td', { class: 'remark' }, v.remark || ''),
      h('td', {}, h('button', { type: 'button', class: 'diff', onclick: () => view.replaceChildren(diffLines(v.glue_source, ta.value)) }, t('diff')),
        h('button', { type: 'button', class: 'restore', onclick: () => { ta.value = v.glue_source; show(); msg.replaceChildren(h('p', { class: 'ok' }, t('restored'))); } }, t('restore')))))));
}

const STATUS = ['pending', 'running', 'success', 'failed', 'killed', 'skipped'];
export const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

/** Jobs by id, asked of the admin once per page: runs name their job and use its time zone. */
export function jobCache() {
  const known = new Map();
  return {
    get: (id) => known.get(id),
    /** Loads the jobs of `ids` not known yet; a job that is gone (or not ours) stays null. */
    async load(ids) {
      const missing = [...new Set(ids)].filter((id) => !known.has(id));
      await Promise.all(missing.map(async (id) => { try { known.set(id, await api('GET', `/v1/jobs/${id}`)); } catch { known.set(id, null); } }));
    },
  };
}

async function runDetail(root, id) {
  const run = await api('GET', `/v1/runs/${id}`);
  const jobs = jobCache();
  await jobs.load([run.job_id]);
  const job = jobs.get(run.job_id);
  const zone = job ? job.time_zone : undefined;
  const log = h('pre', { class: 'log', id: 'run-log' });
  const msg = h('div');
  const note = h('p', { class: 'note', id: 'log-note', hidden: true });
  const status = h('span', { id: 'run-status', class: `st-${run.status}` }, t(run.status));
  // Who killed the run, the runs a retry links, and what became of the alarm: filled in by
  // `extras`, again on every poll (a retry and an alarm come after the run's result).
  const killer = h('span', { id: 'run-killed-by', class: 'note' });
  const links = h('td', { id: 'run-links' });
  const linksRow = h('tr', { hidden: true }, h('th', {}, t('retry_links')), links);
  const alarm = h('td', { id: 'run-alarm' });
  const extras = (r) => {
    killer.textContent = r.killed_by ? ` — ${t('killed_by').replace('{user}', r.killed_by)}` : '';
    const to = (key, n) => h('a', { href: `#runs/${n}`, id: `run-${key.replace('_', '-')}` }, t(key).replace('{id}', n));
    const got = [r.retry_of ? to('retry_of', r.retry_of) : '', r.retry_of && r.retried_by ? ' · ' : '', r.retried_by ? to('retried_by', r.retried_by) : ''];
    links.replaceChildren(...got);
    linksRow.hidden = !r.retry_of && !r.retried_by;
    alarm.className = `alarm-${r.alarm}`; alarm.dataset.alarm = r.alarm;
    alarm.textContent = r.alarm_msg ? `${t(`alarm_${r.alarm}`)}: ${r.alarm_msg}` : t(`alarm_${r.alarm}`);
  };
  extras(run);
  const handle = h('td', { id: 'handle-msg' }, lines(run.handle_msg));
  const handled = h('td', {}, fmtTime(run.handled_at, zone));
  // A run opened right after "Run once" may not be sent yet: the poll below fills these in.
  const triggered = h('td', {}, fmtTime(run.triggered_at, zone));
  const address = h('td', {}, run.executor_address);
  const triggerMsg = (r) => [h('code', {}, `${r.trigger_code}`), ' ', ...lines(r.trigger_msg)];
  const trigger = h('td', { id: 'trigger-msg' }, ...triggerMsg(run));
  const row = (k, v, attrs = {}) => h('tr', {}, h('th', {}, t(k)), v instanceof Node ? v : h('td', attrs, v));
  // Kill is offered only while the run is running (the admin refuses it otherwise), after a confirmation.
  const kill = state.me.can_write ? h('button', { id: 'kill', type: 'button', hidden: run.status !== 'running', onclick: async () => {
    if (!confirm(t('confirm_kill'))) return;
    try { await api('POST', `/v1/runs/${id}/kill`); } catch (e) { msg.replaceChildren(errorBox(e)); }
  } }, t('kill')) : '';
  const jobName = job ? `#${run.job_id} ${job.description}` : `#${run.job_id}`;
  root.replaceChildren(h('h2', {}, `${t('obj_run')} #${run.id} — ${jobName}`),
    h('div', { class: 'card' }, h('table', { id: 'run-detail' },
      row('job', h('td', { id: 'run-job' }, h('a', { href: `#jobs/edit/${run.job_id}` }, jobName))), row('status', h('td', {}, status, killer)),
      linksRow,
      row('trigger_type', t(run.trigger_type)),
      row('scheduled', fmtTime(run.scheduled_at, zone)), row('triggered', triggered), row('address', address),
      row('handler', run.handler), row('param', run.param, { id: 'run-param' }),
      run.shard_total > 1 ? row('shard', `${run.shard_index + 1} / ${run.shard_total}`) : '',
      row('trigger_msg', trigger),
      row('handled', handled), row('handle_msg', handle), row('alarm', alarm))),
    kill, h('button', { type: 'button', onclick: () => go(`#runs/job/${run.job_id}`) }, t('job_runs')), msg,
    h('h3', {}, t('log'), ' ', h('small', { id: 'log-state' }, '')), note, log);
  // Poll while the page is open: the run's state first, then, once it reached an executor, its
  // log from where the last answer ended (the log rolls as the job writes it). Polling stops
  // when the run never reached an executor (there is no log to wait for), and when the run
  // is final and its log has ended.
  const logState = document.getElementById('log-state');
  let from = 1;
  const here = location.hash;
  // A failed run's alarm is decided after its result is recorded: keep its row current a
  // little longer once the rest is final.
  const settleAlarm = async (r) => {
    for (let i = 0; i < 30 && location.hash === here && log.isConnected && ['failed', 'killed'].includes(r.status) && ['none', 'sending'].includes(r.alarm); i += 1) {
      await sleep(1000);
      try { r = await api('GET', `/v1/runs/${id}`); } catch { return; }
      extras(r);
    }
  };
  while (location.hash === here && log.isConnected) {
    let r;
    try { r = await api('GET', `/v1/runs/${id}`); } catch (e) { msg.replaceChildren(errorBox(e)); logState.textContent = ''; return; }
    extras(r);
    status.textContent = t(r.status); status.className = `st-${r.status}`; status.dataset.status = r.status;
    handle.replaceChildren(...lines(r.handle_msg)); handled.textContent = fmtTime(r.handled_at, zone);
    triggered.textContent = fmtTime(r.triggered_at, zone); address.textContent = r.executor_address;
    trigger.replaceChildren(...triggerMsg(r));
    if (kill) kill.hidden = r.status !== 'running';
    if (r.status === 'pending') {
      logState.textContent = `(${t('waiting_dispatch')})`;
      await sleep(1000);
      continue;
    }
    if (r.trigger_code !== 200 || !r.executor_address) {
      // Sending failed (or a missed fire was skipped): no executor has a log of this run.
      msg.replaceChildren(); note.textContent = t('not_sent'); note.hidden = false; log.hidden = true; logState.textContent = '';
      await settleAlarm(r);
      return;
    }
    const final = r.status !== 'running';
    let done;
    try {
      const part = await api('GET', `/v1/runs/${id}/log?from_line=${from}`);
      // The run reached its executor: an error shown before (e.g. "not sent yet") is over.
      msg.replaceChildren();
      if (part.content) {
        const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        // Executors separate lines with newlines and XXL-JOB's `<br>`: both become line breaks.
        for (const n of lines(part.content)) log.append(n);
        if (stick) log.scrollTop = log.scrollHeight;
      }
      if (part.to_line >= from) from = part.to_line + 1;
      done = final && (part.is_end || !part.content);
    } catch (e) {
      // The executor may be briefly unreachable while the run goes on; a final run stops here.
      msg.replaceChildren(errorBox(e));
      done = final;
    }
    logState.textContent = done ? `(${t('log_ended')})` : `(${t('live')})`;
    if (done) { await settleAlarm(r); return; }
    await sleep(1000);
  }
}

/** Epoch ms of a `datetime-local` value (read in UTC when the console shows UTC, else in the browser's zone), or undefined when empty. */
const localMs = (input) => (input.value ? Date.parse(getZoneMode() === 'utc' ? `${input.value}Z` : input.value) : undefined);

/**
 * The job filter of the runs page: a search field whose suggestions the admin finds (by
 * description, handler or owner, 20 at a time), instead of a list of every job. `onpick`
 * gets the chosen job id, or '' when the field is cleared.
 */
function jobPicker(initial, onpick) {
  const list = h('datalist', { id: 'job-choices' });
  const input = h('input', { name: 'job', type: 'search', list: 'job-choices', placeholder: t('search_job'), autocomplete: 'off', value: initial || '' });
  let picked = (/^#(\d+)/.exec(initial || '') || [])[1] || '';
  let asked = 0;
  input.addEventListener('input', async () => {
    const v = input.value.trim();
    const m = /^#(\d+)(\s|$)/.exec(v);
    // Only a picked job (`#id …`) filters; other text searches, and shows every job meanwhile.
    const id = m ? m[1] : '';
    if (id !== picked) { picked = id; onpick(id); }
    if (m || !v) return;
    const seq = ++asked;
    try {
      const found = await api('GET', `/v1/jobs?${new URLSearchParams({ q: v.slice(0, 200), limit: '20' })}`);
      if (seq === asked) list.replaceChildren(...found.map((j) => h('option', { value: `#${j.id} ${j.description}` })));
    } catch { /* suggestions only */ }
  });
  return { input, list, value: () => picked };
}

async function runs(root, args) {
  if (args[0] && args[0] !== 'job') return runDetail(root, Number(args[0]));
  const groups = await groupsList();
  const jobs = jobCache();
  const jobArg = args[0] === 'job' && /^\d+$/.test(args[1] || '') ? Number(args[1]) : null;
  if (jobArg) await jobs.load([jobArg]);
  const jname = (id) => { const j = jobs.get(id); return j ? `#${id} ${j.description}` : `#${id}`; };
  const fg = sel('group_id', [['', `${t('group')}: ${t('all')}`], ...groups.map((g) => [g.id, g.app_name])], '');
  const fj = jobPicker(jobArg ? jname(jobArg) : '', () => { draw(false); needScope(); });
  const fs = sel('status', [['', `${t('status')}: ${t('all')}`], ...STATUS.map((s) => [s, t(s)])], '');
  // The range is on the scheduled time and filtered by the server, page by page.
  const ff = h('input', { name: 'from', type: 'datetime-local', step: '1', title: `${t('from')} (${t('time_range_note')})` });
  const ft = h('input', { name: 'to', type: 'datetime-local', step: '1', title: `${t('to')} (${t('time_range_note')})` });
  const body = h('tbody');
  const msg = h('div');
  const count = h('span', { id: 'run-count' });
  const PAGE = 100;
  const more = h('button', { type: 'button', id: 'more-runs', hidden: true }, t('more'));
  const row = (r) => {
    const j = jobs.get(r.job_id);
    return h('tr', { 'data-run': r.id }, h('td', {}, h('a', { href: `#runs/${r.id}` }, r.id)), h('td', { class: 'job' }, jname(r.job_id)),
      h('td', { class: 'at' }, fmtTime(r.scheduled_at, j ? j.time_zone : undefined)), h('td', {}, t(r.trigger_type)), h('td', {}, r.executor_address), h('td', { class: 'param' }, r.param),
      h('td', { class: `st-${r.status}` }, t(r.status)), h('td', { class: 'msg' }, lines(r.handle_msg)));
  };
  let drawn = 0;
  let last;
  // One page of runs, newest first, below the run id `before` when given.
  const page = (before, limit = PAGE) => {
    const q = new URLSearchParams({ limit: String(limit) });
    if (fg.value) q.set('group_id', fg.value);
    if (fj.value()) q.set('job_id', fj.value());
    if (fs.value) q.set('status', fs.value);
    if (localMs(ff) !== undefined) q.set('from', String(localMs(ff)));
    if (localMs(ft) !== undefined) q.set('to', String(localMs(ft)));
    if (before) q.set('before_id', String(before));
    return api('GET', `/v1/runs?${q}`);
  };
  const show = (got, append, asked) => {
    if (append) body.append(...got.map(row)); else body.replaceChildren(...got.map(row));
    count.textContent = `${body.children.length}`;
    // A full page may have more behind it; the next page starts below its last id.
    more.hidden = got.length < asked;
    if (got.length) last = got[got.length - 1].id;
  };
  // `keep`: an automatic refresh, which reloads as many runs as are shown, so neither the
  // filters nor the place the user scrolled to are lost.
  const draw = async (keep) => {
    // Filters fire quickly; only the newest request may render.
    const seq = ++drawn;
    const limit = keep ? Math.min(1000, Math.max(PAGE, body.children.length)) : PAGE;
    let got;
    try { got = await page(undefined, limit); await jobs.load(got.map((r) => r.job_id)); } catch (e) { if (seq === drawn) { msg.replaceChildren(errorBox(e)); body.replaceChildren(); count.textContent = '0'; more.hidden = true; } return; }
    if (seq !== drawn) return;
    msg.replaceChildren();
    show(got, false, limit);
  };
  more.addEventListener('click', async () => {
    const seq = drawn;
    let got;
    try { got = await page(last); await jobs.load(got.map((r) => r.job_id)); } catch (e) { msg.replaceChildren(errorBox(e)); return; }
    if (seq === drawn) show(got, true, PAGE);
  });
  for (const el of [fg, fs, ff, ft]) el.addEventListener('change', () => draw(false));
  const days = h('input', { type: 'number', min: '0', value: '30', name: 'older_than_days' });
  const cleared = h('span', { id: 'cleared', class: 'ok' });
  const clear = h('button', { type: 'button', id: 'clear-runs', onclick: async () => {
    if (!confirm(t('confirm_clear'))) return;
    try { const r = await api('POST', '/v1/runs/clear', { older_than_days: Number(days.value), group_id: num(fg.value), job_id: num(fj.value()) }); cleared.textContent = `${t('deleted')}: ${r.deleted}`; draw(false); } catch (e) { msg.replaceChildren(errorBox(e)); }
  } }, t('clear'));
  // Users (not admins) clear runs of one group or job at a time: say so instead of failing.
  const scopeNote = h('span', { id: 'clear-note', class: 'note' }, t('clear_needs_scope'));
  const needScope = () => { const none = !state.me.admin && !fg.value && !fj.value(); clear.disabled = none; scopeNote.hidden = !none; };
  fg.addEventListener('change', needScope);
  needScope();
  root.replaceChildren(h('h2', {}, t('runs')), h('div', { class: 'filters' }, fg, fj.input, fj.list, fs,
    h('label', {}, h('span', {}, t('from')), ff), h('label', {}, h('span', {}, t('to')), ft),
    h('button', { type: 'button', onclick: () => draw(false) }, t('refresh')), h('span', {}, `${t('shown')}: `, count), h('span', { class: 'note' }, t('auto_refresh'))),
  state.me.can_write ? h('div', { class: 'filters' }, t('clear_old'), days, clear, scopeNote, cleared) : '', msg,
  h('table', { id: 'runs' }, h('thead', {}, h('tr', {}, ['#', t('job'), t('scheduled'), t('trigger_type'), t('address'), t('param'), t('status'), t('handle_msg')].map((x) => h('th', {}, x)))), body),
  more);
  await draw(false);
  autoRefresh(root, draw);
}

async function users(root) {
  const [list, groups] = await Promise.all([api('GET', '/v1/users'), groupsList()]);
  const slot = h('div');
  const form = (u) => {
    const name = h('input', { name: 'username', value: u ? u.username : '', disabled: u ? true : null });
    const pw = h('input', { name: 'password', type: 'password', autocomplete: 'new-password' });
    const role = sel('role', [['user', t('role_user')], ['admin', t('role_admin')]], u ? u.role : 'user');
    const cw = h('input', { name: 'can_write', type: 'checkbox', checked: u ? u.can_write : true });
    const gs = groups.map((g) => h('label', {}, h('input', { type: 'checkbox', name: 'group', value: g.id, checked: u && u.group_ids.includes(g.id) }), ` ${g.app_name}`));
    const msg = h('div');
    return h('form', { class: 'card', id: 'user-form', onsubmit: async (ev) => {
      ev.preventDefault();
      const body = { role: role.value, can_write: cw.checked, group_ids: gs.map((l) => l.firstChild).filter((c) => c.checked).map((c) => Number(c.value)) };
      if (pw.value) body.password = pw.value;
      try { u ? await api('PUT', `/v1/users/${u.id}`, body) : await api('POST', '/v1/users', { ...body, username: name.value }); go('#users'); } catch (e) { showError(ev.target, msg, e); }
    } }, field('username', name), field(u ? 'new_password' : 'password', pw), field('role', role), field('can_write', cw), h('fieldset', {}, h('legend', {}, t('groups')), gs),
    h('button', { type: 'submit' }, t('save')), msg);
  };
  const gname = (id) => (groups.find((g) => g.id === id) || {}).app_name || id;
  root.replaceChildren(h('h2', {}, t('users')), h('button', { id: 'add-user', type: 'button', onclick: () => slot.replaceChildren(form(null)) }, t('add')), slot,
    h('table', { id: 'users' }, h('tr', {}, [t('username'), t('role'), t('can_write'), t('groups'), ''].map((x) => h('th', {}, x))),
      list.map((u) => h('tr', { 'data-user': u.username }, h('td', {}, u.username), h('td', {}, t(`role_${u.role}`)), h('td', {}, u.can_write ? '✓' : t('read_only')),
        h('td', {}, u.role === 'admin' ? t('all') : u.group_ids.map(gname).join(', ')),
        h('td', {}, h('button', { type: 'button', class: 'edit', onclick: () => slot.replaceChildren(form(u)) }, t('edit')),
          h('button', { type: 'button', onclick: async () => { if (confirm(t('confirm_delete'))) { try { await api('DELETE', `/v1/users/${u.id}`); go('#users'); } catch (e) { slot.replaceChildren(errorBox(e)); } } } }, t('remove')))))));
}

// What the object of an audited route is, by its collection in the path.
const AUDIT_KINDS = { jobs: 'job', groups: 'group', users: 'user', runs: 'obj_run', me: 'user', workflows: 'workflow', 'workflow-instances': 'wf_instance' };
// Routes that act rather than create, change or delete, by their last path segment.
const AUDIT_VERBS = { start: 'start', stop: 'stop', trigger: 'run_once', kill: 'kill', clear: 'clear', password: 'change_password', retry: 'retry_node', skip: 'skip_node', succeed: 'succeed_node' };

/**
 * An audit entry in words: what was done (created, changed and which fields, deleted, or the
 * action such as start or kill) and to which object (job #12, group demo). Entries that are
 * not a route (logins) keep their action. The raw route stays in the cell's title.
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

async function audit(root) {
  const fu = h('input', { name: 'username', type: 'search', placeholder: t('user') });
  const fa = h('input', { name: 'action', type: 'search', placeholder: t('action') });
  const ff = h('input', { name: 'from', type: 'datetime-local', step: '1' });
  const ft = h('input', { name: 'to', type: 'datetime-local', step: '1' });
  const body = h('tbody');
  const msg = h('div');
  const PAGE = 100;
  const more = h('button', { type: 'button', id: 'more-audit', hidden: true }, t('more'));
  let drawn = 0;
  let last;
  const page = (before) => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (fu.value.trim()) q.set('username', fu.value.trim());
    if (fa.value.trim()) q.set('action', fa.value.trim());
    if (localMs(ff) !== undefined) q.set('from', String(localMs(ff)));
    if (localMs(ft) !== undefined) q.set('to', String(localMs(ft)));
    if (before) q.set('before_id', String(before));
    return api('GET', `/v1/audit?${q}`);
  };
  const row = (a) => {
    const status = a.detail && a.detail.status;
    const sum = auditSummary(a);
    return h('tr', { 'data-audit': a.id }, h('td', { class: 'at' }, fmtTime(a.at)), h('td', {}, a.username),
      h('td', { class: 'action', title: a.action, 'data-action': a.action }, sum.what), h('td', { class: 'target', title: a.target }, sum.object),
      h('td', { class: status >= 400 ? 'err' : null }, status ? `${status}${status === 403 ? ` ${t('audit_refused')}` : ''}` : ''),
      h('td', { class: 'detail' }, JSON.stringify(a.detail)));
  };
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

async function password(root) {
  const cur = h('input', { name: 'current_password', type: 'password', autocomplete: 'current-password', required: true });
  const nw = h('input', { name: 'new_password', type: 'password', autocomplete: 'new-password', required: true });
  const msg = h('div');
  root.replaceChildren(h('h2', {}, t('change_password')), h('form', { class: 'card', id: 'password-form', onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      await api('POST', '/v1/me/password', { current_password: cur.value, new_password: nw.value });
      cur.value = ''; nw.value = '';
      clearErrors(ev.target);
      msg.replaceChildren(h('p', { class: 'ok' }, t('saved')));
    } catch (e) { showError(ev.target, msg, e); }
  } }, field('current_password', cur), field('new_password', nw), h('button', { type: 'submit' }, t('save')), msg));
}

export const pages = { dashboard, executors, jobs, script, runs, users, audit, password };
