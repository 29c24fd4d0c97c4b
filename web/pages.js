// The console's pages. Each is `async (root, args) => void` and builds DOM with `h` only.
import { h, api, state, fmtTime, errorBox, showError, clearErrors, go } from './app.js';
import { t } from './i18n.js';

const DAY = 86400000;
const field = (label, input) => h('label', {}, h('span', {}, t(label)), input);
const sel = (name, options, value) => h('select', { name }, options.map(([v, l]) => h('option', { value: v, selected: String(v) === String(value) ? true : null }, l)));
const num = (v) => (v === '' || v === undefined ? undefined : Number(v));

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
    for (const el of bars.querySelectorAll('[data-h]')) el.style.height = `${(Number(el.dataset.h) / max) * 120}px`;
    const legend = h('div', { class: 'legend' }, h('span', { class: 'key s' }), t('success'), h('span', { class: 'key f' }), t('failed'), h('span', { class: 'key r' }), t('running'));
    out.replaceChildren(
      h('div', { class: 'cards' }, card('groups', s.groups), card('jobs', s.jobs), card('running_jobs', s.running_jobs),
        card('live_executors', s.executors), card('runs_in_range', sum('success') + sum('failed') + sum('running') + sum('skipped')),
        card('success', sum('success')), card('failed', sum('failed')), card('running', sum('running')),
        card('lateness_now', s.lateness.current_seconds.toFixed(1)), card('lateness', s.lateness.mean_seconds.toFixed(3))),
      h('div', { class: 'card' }, h('h3', {}, t('runs_per_day')), legend, bars));
  };
  for (const el of [fromIn, toIn]) el.addEventListener('change', draw);
  root.replaceChildren(h('h2', {}, t('dashboard')),
    h('div', { class: 'filters' }, field('from', fromIn), field('to', toIn), h('button', { type: 'button', id: 'refresh', onclick: draw }, t('refresh'))), msg, out);
  await draw();
}

async function executors(root) {
  const [groups, live] = await Promise.all([groupsList(), api('GET', '/v1/executors')]);
  const liveOf = (id) => (live.find((g) => g.group_id === id) || { executors: [] }).executors;
  const form = (g) => {
    const app = h('input', { name: 'app_name', value: g ? g.app_name : '' });
    const title = h('input', { name: 'title', value: g ? g.title : '' });
    const addrs = h('input', { name: 'addresses', value: g ? g.addresses.join(',') : '', placeholder: 'http://host:port,…' });
    const msg = h('div');
    return h('form', { class: 'card', id: 'group-form', onsubmit: async (ev) => {
      ev.preventDefault();
      const list = addrs.value.split(',').map((a) => a.trim()).filter(Boolean);
      const body = { app_name: app.value, title: title.value || undefined, addresses: list, address_type: list.length ? 'manual' : 'auto' };
      try { g ? await api('PUT', `/v1/groups/${g.id}`, body) : await api('POST', '/v1/groups', body); go('#executors'); } catch (e) { showError(ev.target, msg, e); }
    } }, field('app_name', app), field('title', title), field('addresses', addrs), h('button', { type: 'submit' }, t('save')), msg);
  };
  const slot = h('div');
  // Groups are the admins' to change: a group's addresses receive the executor access token,
  // which every group shares (the server refuses others anyway).
  root.replaceChildren(h('h2', {}, t('executors')),
    state.me.admin ? h('button', { id: 'add-group', onclick: () => slot.replaceChildren(form(null)) }, t('add')) : h('p', { class: 'note', id: 'groups-note' }, t('groups_admin_only')), slot,
    h('table', { id: 'groups' }, h('tr', {}, [t('app_name'), t('title'), t('addresses'), t('last_heartbeat'), ''].map((x) => h('th', {}, x))),
      groups.map((g) => h('tr', { 'data-app': g.app_name }, h('td', {}, g.app_name), h('td', {}, g.title),
        h('td', {}, liveOf(g.id).map((e) => h('div', {}, e.address))),
        h('td', {}, liveOf(g.id).map((e) => h('div', {}, fmtTime(e.last_heartbeat)))),
        h('td', {}, state.me.admin ? [h('button', { onclick: () => slot.replaceChildren(form(g)) }, t('edit')),
          h('button', { onclick: async () => { if (confirm(t('confirm_delete'))) { try { await api('DELETE', `/v1/groups/${g.id}`); go('#executors'); } catch (e) { slot.replaceChildren(errorBox(e)); } } } }, t('remove'))] : '')))));
}

function previewer(typeSel, exprIn, tzIn, out) {
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
        out.replaceChildren(h('div', { class: 'ok' }, `${t('next_fires')} (${p.time_zone})`),
          h('ol', { id: 'preview' }, p.next.map((n) => h('li', {}, n.local, n.dst_shift ? h('span', { class: 'dst' }, ` ⚠ ${t('dst')} (UTC${n.utc_offset_secs >= 0 ? '+' : '-'}${Math.abs(n.utc_offset_secs / 3600)})`) : ''))));
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

async function jobForm(root, job, groups, jobs) {
  const j = job || { schedule_type: 'CRON', schedule_expr: '0 * * * * ?', time_zone: '', glue_type: 'BEAN', route_strategy: 'FIRST', block_strategy: 'SERIAL_EXECUTION', misfire_strategy: 'DO_NOTHING', retry_count: 0, timeout_secs: 0, child_job_ids: [] };
  // Child jobs run in their own group, so only jobs the user may operate are offered. A child
  // an admin linked from another group stays selected (by id: its name is not ours to see).
  const offered = jobs.filter((o) => operates(o.group_id) && (!job || o.id !== job.id));
  const foreign = (job && job.id ? j.child_job_ids : []).filter((id) => !offered.some((o) => o.id === id));
  const f = {
    group_id: sel('group_id', groups.filter((g) => operates(g.id)).map((g) => [g.id, g.app_name]), j.group_id),
    description: h('input', { name: 'description', value: j.description || '' }),
    owner: h('input', { name: 'owner', value: j.owner || '' }),
    alarm_contacts: h('input', { name: 'alarm_contacts', value: j.alarm_contacts || '', placeholder: 'ops@example.com, …' }),
    schedule_type: sel('schedule_type', [['CRON', 'CRON'], ['FIX_RATE', 'FIX_RATE'], ['NONE', 'NONE']], j.schedule_type),
    schedule_expr: h('input', { name: 'schedule_expr', value: j.schedule_expr || '' }),
    time_zone: h('input', { name: 'time_zone', value: j.time_zone || '', placeholder: 'UTC, Asia/Shanghai…' }),
    handler: h('input', { name: 'handler', value: j.handler || '' }),
    param: h('input', { name: 'param', value: j.param || '' }),
    route_strategy: sel('route_strategy', ['FIRST', 'LAST', 'ROUND', 'RANDOM', 'CONSISTENT_HASH', 'LEAST_FREQUENTLY_USED', 'LEAST_RECENTLY_USED', 'FAILOVER', 'BUSYOVER', 'SHARDING_BROADCAST'].map((x) => [x, x]), j.route_strategy),
    block_strategy: sel('block_strategy', ['SERIAL_EXECUTION', 'DISCARD_LATER', 'COVER_EARLY'].map((x) => [x, x]), j.block_strategy),
    misfire_strategy: sel('misfire_strategy', ['DO_NOTHING', 'FIRE_ONCE_NOW'].map((x) => [x, x]), j.misfire_strategy),
    retry_count: h('input', { name: 'retry_count', type: 'number', value: j.retry_count }),
    timeout_secs: h('input', { name: 'timeout_secs', type: 'number', value: j.timeout_secs }),
    child_job_ids: h('select', { name: 'child_job_ids', multiple: true },
      offered.map((o) => h('option', { value: o.id, selected: j.child_job_ids.includes(o.id) ? true : null }, `${o.id} ${o.description}`)),
      foreign.map((id) => h('option', { value: id, selected: true }, `#${id}`))),
  };
  const glue = state.me.admin ? sel('glue_type', ['BEAN', 'GLUE_SHELL', 'GLUE_PYTHON', 'GLUE_NODEJS', 'GLUE_PHP', 'GLUE_POWERSHELL', 'GLUE_GROOVY'].map((x) => [x, x]), j.glue_type) : null;
  const preview = h('div', { id: 'preview-box' });
  const msg = h('div');
  const form = h('form', { class: 'card', id: 'job-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const cron = f.schedule_type.value === 'CRON';
    const body = {
      group_id: num(f.group_id.value), description: f.description.value, owner: f.owner.value, alarm_contacts: f.alarm_contacts.value,
      schedule_type: f.schedule_type.value, schedule_expr: f.schedule_expr.value,
      // The zone applies to CRON only; left out, a job keeps the one it has.
      time_zone: cron && f.time_zone.value ? f.time_zone.value : undefined, handler: f.handler.value, param: f.param.value,
      route_strategy: f.route_strategy.value, block_strategy: f.block_strategy.value, misfire_strategy: f.misfire_strategy.value,
      retry_count: num(f.retry_count.value), timeout_secs: num(f.timeout_secs.value),
      child_job_ids: [...f.child_job_ids.selectedOptions].map((o) => Number(o.value)),
    };
    if (glue) {
      body.glue_type = glue.value;
      // A new GLUE job (or one changing language) starts from a template, edited in the script editor.
      if (glue.value !== 'BEAN' && !(job && job.id && job.glue_type === glue.value)) body.glue_source = (job && job.glue_type === glue.value && job.glue_source) || GLUE_TEMPLATES[glue.value];
    }
    clearErrors(form); msg.replaceChildren();
    try { job && job.id ? await api('PUT', `/v1/jobs/${job.id}`, body) : await api('POST', '/v1/jobs', body); go('#jobs'); } catch (e) { showError(form, msg, e); }
  } }, Object.entries(f).map(([k, el]) => [field(k === 'group_id' ? 'group' : k, el), k === 'time_zone' ? preview : '', k === 'group_id' && glue ? field('glue_type', glue) : '']),
  h('button', { type: 'submit' }, t('save')), h('button', { type: 'button', onclick: () => go('#jobs') }, t('cancel')), msg);
  root.replaceChildren(h('h2', {}, t('jobs')), form);
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

async function jobs(root, args) {
  const [groups, list] = await Promise.all([groupsList(), api('GET', '/v1/jobs')]);
  if (args[0] === 'new' || args[0] === 'edit' || args[0] === 'copy') {
    const job = args[1] ? list.find((j) => j.id === Number(args[1])) : null;
    if (args[0] !== 'new' && !job) throw Object.assign(new Error(`job ${args[1]} not found`), { status: 404 });
    // A copy is the job without its id: the form saves it as a new job.
    return jobForm(root, args[0] === 'copy' ? { ...job, id: undefined, description: `${job.description} ${t('copy_suffix')}` } : job, groups, list);
  }
  const fg = sel('group', [['', `${t('group')}: ${t('all')}`], ...groups.map((g) => [g.id, g.app_name])], '');
  const fs = sel('status', [['', `${t('status')}: ${t('all')}`], ['1', t('started')], ['0', t('stopped')]], '');
  const fh = h('input', { name: 'handler', type: 'search', placeholder: t('handler') });
  const fd = h('input', { name: 'description', type: 'search', placeholder: t('description') });
  const body = h('tbody');
  const msg = h('div');
  const gname = (id) => (groups.find((g) => g.id === id) || {}).app_name || id;
  const act = (label, fn) => h('button', { type: 'button', onclick: async () => { try { await fn(); draw(); } catch (e) { msg.replaceChildren(errorBox(e)); } } }, t(label));
  let rows = list;
  let drawn = 0;
  const draw = async () => {
    // Filters fire quickly; only the newest request may render.
    const seq = ++drawn;
    rows = await api('GET', '/v1/jobs');
    if (seq !== drawn) return;
    const qh = fh.value.toLowerCase(); const qd = fd.value.toLowerCase();
    body.replaceChildren(...rows.filter((j) => (!fg.value || j.group_id === Number(fg.value)) && (!fs.value || String(Number(j.running)) === fs.value)
      && (!qh || j.handler.toLowerCase().includes(qh)) && (!qd || j.description.toLowerCase().includes(qd))).map((j) => h('tr', { 'data-job': j.id },
      h('td', {}, j.id), h('td', {}, gname(j.group_id)), h('td', { class: 'desc' }, j.description), h('td', {}, j.schedule_type === 'NONE' ? j.schedule_type : `${j.schedule_type} ${j.schedule_expr}`),
      h('td', {}, j.glue_type === 'BEAN' ? j.handler : j.glue_type), h('td', { class: j.running ? 'ok' : null }, j.running ? `▶ ${t('started')}` : `■ ${t('stopped')}`),
      h('td', { class: 'next-fire' }, j.running && j.next_fire_at > 0 ? fmtTime(j.next_fire_at) : ''),
      h('td', {}, h('a', { href: `#runs/job/${j.id}`, class: 'job-runs', title: t('job_runs') }, t('runs')), ' ', state.me.can_write ? [
        j.running ? act('stop', () => api('POST', `/v1/jobs/${j.id}/stop`)) : act('start', () => api('POST', `/v1/jobs/${j.id}/start`)),
        act('run_once', async () => { const p = prompt(t('param_prompt'), j.param); if (p !== null) { const r = await api('POST', `/v1/jobs/${j.id}/trigger`, { param: p, trigger_type: 'MANUAL' }); go(`#runs/${r.run_id}`); } }),
        h('button', { type: 'button', onclick: () => go(`#jobs/edit/${j.id}`) }, t('edit')),
        h('button', { type: 'button', onclick: () => go(`#jobs/copy/${j.id}`) }, t('copy')),
        state.me.admin && j.glue_type !== 'BEAN' ? h('button', { type: 'button', onclick: () => go(`#script/${j.id}`) }, t('script')) : '',
        act('remove', async () => { if (confirm(t('confirm_delete'))) await api('DELETE', `/v1/jobs/${j.id}`); }),
      ] : ''))));
  };
  for (const el of [fg, fs, fh, fd]) el.addEventListener('input', draw);
  root.replaceChildren(h('h2', {}, t('jobs')), h('div', { class: 'filters' }, fg, fs, fh, fd,
    state.me.can_write ? h('button', { id: 'new-job', type: 'button', onclick: () => go('#jobs/new') }, t('add')) : ''), msg,
  h('table', { id: 'jobs' }, h('thead', {}, h('tr', {}, ['#', t('group'), t('description'), t('schedule'), t('handler'), t('status'), t('next_fire'), ''].map((x) => h('th', {}, x)))), body));
  await draw();
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
    h('table', { id: 'versions' }, versions.map((v) => h('tr', { 'data-version': v.id }, h('td', {}, fmtTime(v.created_at)), h('td', {}, v.author),
      h('td', {}, h('button', { type: 'button', class: 'diff', onclick: () => view.replaceChildren(diffLines(v.glue_source, ta.value)) }, t('diff')),
        h('button', { type: 'button', class: 'restore', onclick: () => { ta.value = v.glue_source; show(); msg.replaceChildren(h('p', { class: 'ok' }, t('restored'))); } }, t('restore')))))));
}

const STATUS = ['pending', 'running', 'success', 'failed', 'skipped'];

async function runDetail(root, id) {
  const run = await api('GET', `/v1/runs/${id}`);
  const log = h('pre', { class: 'log', id: 'run-log' });
  const msg = h('div');
  const status = h('span', { id: 'run-status', class: `st-${run.status}` }, t(run.status));
  const handle = h('td', { id: 'handle-msg' }, lines(run.handle_msg));
  const handled = h('td', {}, fmtTime(run.handled_at));
  // A run opened right after "Run once" may not be sent yet: the poll below fills these in.
  const triggered = h('td', {}, fmtTime(run.triggered_at));
  const address = h('td', {}, run.executor_address);
  const triggerMsg = (r) => [h('code', {}, `${r.trigger_code}`), ' ', ...lines(r.trigger_msg)];
  const trigger = h('td', { id: 'trigger-msg' }, ...triggerMsg(run));
  const row = (k, v, attrs = {}) => h('tr', {}, h('th', {}, t(k)), v instanceof Node ? v : h('td', attrs, v));
  // Kill is offered only while the run is running (the admin refuses it otherwise).
  const kill = state.me.can_write ? h('button', { id: 'kill', type: 'button', hidden: run.status !== 'running', onclick: async () => { try { await api('POST', `/v1/runs/${id}/kill`); } catch (e) { msg.replaceChildren(errorBox(e)); } } }, t('kill')) : '';
  root.replaceChildren(h('h2', {}, `${t('runs')} #${run.id}`),
    h('div', { class: 'card' }, h('table', { id: 'run-detail' },
      row('job', h('td', {}, h('a', { href: `#jobs/edit/${run.job_id}` }, `#${run.job_id}`))), row('status', h('td', {}, status)),
      row('trigger_type', t(run.trigger_type)),
      row('scheduled', fmtTime(run.scheduled_at)), row('triggered', triggered), row('address', address),
      row('handler', run.handler), row('param', run.param, { id: 'run-param' }),
      run.shard_total > 1 ? row('shard', `${run.shard_index + 1} / ${run.shard_total}`) : '',
      row('trigger_msg', trigger),
      row('handled', handled), row('handle_msg', handle))),
    kill, h('button', { type: 'button', onclick: () => go(`#runs/job/${run.job_id}`) }, t('job_runs')), msg,
    h('h3', {}, t('log'), ' ', h('small', { id: 'log-state' }, '')), log);
  // Poll the executor's log while the page is open; each answer says where to continue, so
  // new lines are appended (the log rolls) until the run has ended and the log is complete.
  const logState = document.getElementById('log-state');
  let from = 1;
  const here = location.hash;
  while (location.hash === here && log.isConnected) {
    let done = false;
    try {
      const part = await api('GET', `/v1/runs/${id}/log?from_line=${from}`);
      if (part.content) {
        const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        // Executors separate lines with newlines and XXL-JOB's `<br>`: both become line breaks.
        for (const n of lines(part.content)) log.append(n);
        if (stick) log.scrollTop = log.scrollHeight;
      }
      if (part.to_line >= from) from = part.to_line + 1;
      const r = await api('GET', `/v1/runs/${id}`);
      status.textContent = t(r.status); status.className = `st-${r.status}`; status.dataset.status = r.status;
      handle.replaceChildren(...lines(r.handle_msg)); handled.textContent = fmtTime(r.handled_at);
      triggered.textContent = fmtTime(r.triggered_at); address.textContent = r.executor_address;
      trigger.replaceChildren(...triggerMsg(r));
      if (kill) kill.hidden = r.status !== 'running';
      done = part.is_end && r.status !== 'running' && r.status !== 'pending';
      logState.textContent = done ? '' : `(${t('live')})`;
    } catch (e) {
      // A run that never reached an executor has no log; say so once and stop polling.
      msg.replaceChildren(errorBox(e)); done = e.status !== 409 || run.status !== 'pending';
      logState.textContent = '';
    }
    if (done) break;
    await new Promise((res) => setTimeout(res, 1000));
  }
}

/** Epoch ms of a `datetime-local` value (read in the browser's zone), or undefined when empty. */
const localMs = (input) => (input.value ? Date.parse(input.value) : undefined);

async function runs(root, args) {
  if (args[0] && args[0] !== 'job') return runDetail(root, Number(args[0]));
  const [groups, jobList] = await Promise.all([groupsList(), api('GET', '/v1/jobs')]);
  const fg = sel('group_id', [['', `${t('group')}: ${t('all')}`], ...groups.map((g) => [g.id, g.app_name])], '');
  const fj = sel('job_id', [['', `${t('job')}: ${t('all')}`], ...jobList.map((j) => [j.id, `#${j.id} ${j.description}`])], args[0] === 'job' ? args[1] : '');
  const fs = sel('status', [['', `${t('status')}: ${t('all')}`], ...STATUS.map((s) => [s, t(s)])], '');
  // The range is on the scheduled time and filtered by the server, page by page.
  const ff = h('input', { name: 'from', type: 'datetime-local', step: '1', title: `${t('from')} (${t('time_range_note')})` });
  const ft = h('input', { name: 'to', type: 'datetime-local', step: '1', title: `${t('to')} (${t('time_range_note')})` });
  const body = h('tbody');
  const msg = h('div');
  const count = h('span', { id: 'run-count' });
  const PAGE = 100;
  const more = h('button', { type: 'button', id: 'more-runs', hidden: true }, t('more'));
  const jname = (id) => { const j = jobList.find((x) => x.id === id); return j ? `#${id} ${j.description}` : `#${id}`; };
  const row = (r) => h('tr', { 'data-run': r.id }, h('td', {}, h('a', { href: `#runs/${r.id}` }, r.id)), h('td', { class: 'job' }, jname(r.job_id)),
    h('td', {}, fmtTime(r.scheduled_at)), h('td', {}, t(r.trigger_type)), h('td', {}, r.executor_address), h('td', { class: 'param' }, r.param),
    h('td', { class: `st-${r.status}` }, t(r.status)), h('td', { class: 'msg' }, lines(r.handle_msg)));
  let drawn = 0;
  let last;
  // One page of runs, newest first, below the run id `before` when given.
  const page = (before) => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (fg.value) q.set('group_id', fg.value);
    if (fj.value) q.set('job_id', fj.value);
    if (fs.value) q.set('status', fs.value);
    if (localMs(ff) !== undefined) q.set('from', String(localMs(ff)));
    if (localMs(ft) !== undefined) q.set('to', String(localMs(ft)));
    if (before) q.set('before_id', String(before));
    return api('GET', `/v1/runs?${q}`);
  };
  const show = (got, append) => {
    if (append) body.append(...got.map(row)); else body.replaceChildren(...got.map(row));
    count.textContent = `${body.children.length}`;
    // A full page may have more behind it; the next page starts below its last id.
    more.hidden = got.length < PAGE;
    if (got.length) last = got[got.length - 1].id;
  };
  const draw = async () => {
    // Filters fire quickly; only the newest request may render.
    const seq = ++drawn;
    msg.replaceChildren();
    let got;
    try { got = await page(); } catch (e) { if (seq === drawn) { msg.replaceChildren(errorBox(e)); body.replaceChildren(); count.textContent = '0'; more.hidden = true; } return; }
    if (seq !== drawn) return;
    show(got, false);
  };
  more.addEventListener('click', async () => {
    const seq = drawn;
    let got;
    try { got = await page(last); } catch (e) { msg.replaceChildren(errorBox(e)); return; }
    if (seq === drawn) show(got, true);
  });
  for (const el of [fg, fj, fs, ff, ft]) el.addEventListener('change', draw);
  const days = h('input', { type: 'number', min: '0', value: '30', name: 'older_than_days' });
  const cleared = h('span', { id: 'cleared', class: 'ok' });
  const clear = h('button', { type: 'button', id: 'clear-runs', onclick: async () => {
    if (!confirm(t('confirm_clear'))) return;
    try { const r = await api('POST', '/v1/runs/clear', { older_than_days: Number(days.value), group_id: num(fg.value), job_id: num(fj.value) }); cleared.textContent = `${t('deleted')}: ${r.deleted}`; draw(); } catch (e) { msg.replaceChildren(errorBox(e)); }
  } }, t('clear'));
  // Users (not admins) clear runs of one group or job at a time: say so instead of failing.
  const scopeNote = h('span', { id: 'clear-note', class: 'note' }, t('clear_needs_scope'));
  const needScope = () => { const none = !state.me.admin && !fg.value && !fj.value; clear.disabled = none; scopeNote.hidden = !none; };
  for (const el of [fg, fj]) el.addEventListener('change', needScope);
  needScope();
  root.replaceChildren(h('h2', {}, t('runs')), h('div', { class: 'filters' }, fg, fj, fs,
    h('label', {}, h('span', {}, t('from')), ff), h('label', {}, h('span', {}, t('to')), ft),
    h('button', { type: 'button', onclick: draw }, t('refresh')), h('span', {}, `${t('shown')}: `, count)),
  state.me.can_write ? h('div', { class: 'filters' }, t('clear_old'), days, clear, scopeNote, cleared) : '', msg,
  h('table', { id: 'runs' }, h('thead', {}, h('tr', {}, ['#', t('job'), t('scheduled'), t('trigger_type'), t('address'), t('param'), t('status'), t('handle_msg')].map((x) => h('th', {}, x)))), body),
  more);
  await draw();
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
    return h('tr', { 'data-audit': a.id }, h('td', { class: 'at' }, fmtTime(a.at)), h('td', {}, a.username), h('td', {}, a.action), h('td', { class: 'target' }, a.target),
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
