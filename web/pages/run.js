// @ts-check
// One run: its details, kept current while it goes on, and its log as the executor writes it.
import { h, lines, sleep } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { mayOperate } from '../lib/session.js';
import { go } from '../lib/nav.js';
import { fmtTime } from '../lib/time.js';
import { errorBox } from '../lib/forms.js';
import { jobCache } from '../lib/widgets.js';
import { kindName } from '../lib/channels.js';
import { t } from '../i18n.js';

/**
 * `#runs/ID`.
 * @param {HTMLElement} root
 * @param {string[]} args
 */
export async function runDetail(root, args) {
  const id = Number(args[0]);
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
  // Each delivery of the alarm (one per channel, `/v1/runs/{id}/alarms`), under the Alarm
  // row: asked again when the alarm's state changes and while a delivery is pending.
  const deliveries = h('tbody');
  const deliveriesRow = h('tr', { hidden: true }, h('th', {}, t('alarm_deliveries')), h('td', {},
    h('table', { id: 'run-alarms', class: 'deliveries' },
      h('thead', {}, h('tr', {}, ['delivery_channel', 'chan_kind', 'status', 'attempts', 'error', 'delivery_sent_at'].map((k) => h('th', {}, t(k))))), deliveries)));
  let askedFor = '';
  let pending = false;
  /** @param {any} r */
  const loadDeliveries = async (r) => {
    if (r.alarm === askedFor && !pending) return;
    askedFor = r.alarm;
    /** @type {any[]} */
    let list;
    try { list = await api('GET', `/v1/runs/${id}/alarms`); } catch { askedFor = ''; return; }
    pending = list.some((d) => d.state === 'pending');
    deliveries.replaceChildren(...list.map((d) => h('tr', { 'data-channel': d.channel, 'data-state': d.state },
      h('td', { class: 'channel' }, d.channel),
      h('td', { class: 'kind' }, kindName(d.kind)),
      h('td', { class: `state delivery-${d.state}` }, t(`delivery_${d.state}`)),
      h('td', { class: 'attempts' }, String(d.attempts)),
      h('td', { class: 'error' }, d.error),
      h('td', { class: 'sent-at' }, fmtTime(d.sent_at, zone)))));
    deliveriesRow.hidden = !list.length;
  };
  /** @param {any} r */
  const extras = (r) => {
    killer.textContent = r.killed_by ? ` — ${t('killed_by').replace('{user}', r.killed_by)}` : '';
    /** @param {string} key @param {number} n */
    const to = (key, n) => h('a', { href: `#runs/${n}`, id: `run-${key.replace('_', '-')}` }, t(key).replace('{id}', String(n)));
    const got = [r.retry_of ? to('retry_of', r.retry_of) : '', r.retry_of && r.retried_by ? ' · ' : '', r.retried_by ? to('retried_by', r.retried_by) : ''];
    links.replaceChildren(...got);
    linksRow.hidden = !r.retry_of && !r.retried_by;
    alarm.className = `alarm-${r.alarm}`; alarm.dataset.alarm = r.alarm;
    alarm.textContent = r.alarm_msg ? `${t(`alarm_${r.alarm}`)}: ${r.alarm_msg}` : t(`alarm_${r.alarm}`);
    loadDeliveries(r);
  };
  extras(run);
  const handle = h('td', { id: 'handle-msg' }, lines(run.handle_msg));
  const handled = h('td', {}, fmtTime(run.handled_at, zone));
  // A run opened right after "Run once" may not be sent yet: the poll below fills these in.
  const triggered = h('td', {}, fmtTime(run.triggered_at, zone));
  const address = h('td', {}, run.executor_address);
  /** @param {any} r */
  const triggerMsg = (r) => [h('code', {}, `${r.trigger_code}`), ' ', ...lines(r.trigger_msg)];
  const trigger = h('td', { id: 'trigger-msg' }, ...triggerMsg(run));
  /** @param {string} k @param {Node | string} v @param {Record<string, string>} [attrs] */
  const row = (k, v, attrs = {}) => h('tr', {}, h('th', {}, t(k)), v instanceof Node ? v : h('td', attrs, v));
  // Kill is offered only while the run is running (the admin refuses it otherwise), after a confirmation.
  const kill = mayOperate(run.group_id) ? h('button', { id: 'kill', type: 'button', hidden: run.status !== 'running', onclick: async () => {
    if (!confirm(t('confirm_kill'))) return;
    try { await api('POST', `/v1/runs/${id}/kill`); } catch (e) { msg.replaceChildren(errorBox(e)); }
  } }, t('kill')) : undefined;
  const jobName = job ? `#${run.job_id} ${job.description}` : `#${run.job_id}`;
  const logState = h('small', { id: 'log-state' }, '');
  // The log is what a run's page is opened for: it comes first, under the run's status; the
  // trigger details (several lines from the executor) follow, and can be folded away.
  root.replaceChildren(h('h2', {}, `${t('obj_run')} #${run.id} — ${jobName}`),
    h('p', { class: 'run-head' }, h('strong', {}, `${t('status')}: `), status, killer, ' ', kill || '',
      h('button', { type: 'button', onclick: () => go(`#runs/job/${run.job_id}`) }, t('job_runs'))), msg,
    h('h3', {}, t('log'), ' ', logState), note, log,
    h('details', { class: 'card run-info', id: 'run-info', open: true }, h('summary', {}, t('details')), h('table', { id: 'run-detail' },
      row('job', h('td', { id: 'run-job' }, h('a', { href: `#jobs/edit/${run.job_id}` }, jobName))),
      linksRow,
      row('trigger_type', t(run.trigger_type)),
      row('scheduled', fmtTime(run.scheduled_at, zone)), row('triggered', triggered), row('address', address),
      row('handler', run.handler), row('param', run.param, { id: 'run-param' }),
      run.shard_total > 1 ? row('shard', `${run.shard_index + 1} / ${run.shard_total}`) : '',
      row('trigger_msg', trigger),
      row('handled', handled), row('handle_msg', handle), row('alarm', alarm), deliveriesRow)));
  // Poll while the page is open: the run's state first, then, once it reached an executor, its
  // log from where the last answer ended (the log rolls as the job writes it). Polling stops
  // when the run never reached an executor (there is no log to wait for), and when the run
  // is final and its log has ended.
  let from = 1;
  const here = location.hash;
  // A failed run's alarm is decided after its result is recorded: keep its row current a
  // little longer once the rest is final.
  /** @param {any} r */
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
