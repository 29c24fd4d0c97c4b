// @ts-check
// The job form (new, edit, copy), built from the job field table (`JOB_FIELDS`) and, for the
// fields the table does not know, from the admin's schema of the job body.
import { h } from '../lib/dom.js';
import { api, options, groupsList, jobBodySchema, calendarsList } from '../lib/api.js';
import { me, mayEdit } from '../lib/session.js';
import { go } from '../lib/nav.js';
import { JOB_FIELDS, JOB_SECTIONS, schemaFields, shownFields } from '../lib/fields.js';
import { controls, control, formBody, rowsOf, section, clearErrors, showError } from '../lib/forms.js';
import { previewer } from '../lib/schedule.js';
import { channelNames } from '../lib/widgets.js';
import { calendarChoices } from '../lib/calendars.js';
import { t } from '../i18n.js';

/** Starting points for new GLUE jobs. @type {Record<string, string>} */
const GLUE_TEMPLATES = {
  GLUE_SHELL: '#!/bin/bash\necho "hello from Chime"\necho "param: $1"\nexit 0\n',
  GLUE_PYTHON: '#!/usr/bin/env python3\nimport sys\nprint("hello from Chime, param:", sys.argv[1] if len(sys.argv) > 1 else "")\n',
  GLUE_NODEJS: '#!/usr/bin/env node\nconsole.log("hello from Chime, param:", process.argv[2] || "");\n',
  GLUE_PHP: '<?php\necho "hello from Chime\\n";\n',
  GLUE_POWERSHELL: 'Write-Host "hello from Chime"\n',
  GLUE_GROOVY: 'println "hello from Chime"\n',
};

/**
 * The handler field's suggestions for group `groupId`: the handlers its Chime executors say they
 * run (in their registrations), and the names its jobs already use.
 * @param {string} groupId
 * @returns {Promise<string[]>}
 */
async function suggestedHandlers(groupId) {
  if (!groupId) return [];
  const [jobs, groups] = await Promise.all([
    api('GET', `/v1/jobs?group_id=${groupId}&limit=1000`),
    api('GET', `/v1/executors?group=${groupId}`).catch(() => []),
  ]);
  /** @type {string[]} */
  const names = jobs.map((/** @type {any} */ j) => j.handler);
  for (const g of groups) for (const e of g.executors || []) names.push(...(e.handlers || []));
  return [...new Set(names.filter(Boolean))].sort();
}

/**
 * `#jobs/new`, `#jobs/edit/ID`, `#jobs/copy/ID`.
 * @param {HTMLElement} root
 * @param {string[]} args
 */
export async function jobFormPage(root, args) {
  const [what, id] = args;
  const [groups, found, jobs] = await Promise.all([groupsList(), id ? api('GET', `/v1/jobs/${Number(id)}`) : null, api('GET', '/v1/jobs')]);
  // A copy is the job without its id: the form saves it as a new job.
  const job = what === 'copy' && found ? { ...found, id: undefined, key: undefined, description: `${found.description} ${t('copy_suffix')}` } : found;
  return jobForm(root, job, groups, jobs);
}

/**
 * @param {HTMLElement} root
 * @param {any} job the job edited or copied, or null for a new one
 * @param {any[]} groups
 * @param {any[]} jobs the jobs offered as child jobs
 */
async function jobForm(root, job, groups, jobs) {
  const [o, { doc, schema }, calendars] = await Promise.all([options(), jobBodySchema(), calendarsList()]);
  const isNew = !(job && job.id);
  // Child jobs run in their own group, so only jobs of groups the user edits are offered. A child
  // an admin linked from another group stays chosen (by id: its name is not ours to see).
  const offered = jobs.filter((x) => mayEdit(x.group_id) && (!job || x.id !== job.id));
  /** @type {number[]} */
  const foreign = (isNew ? [] : job.child_job_ids).filter((/** @type {number} */ cid) => !offered.some((x) => x.id === cid));
  const choices = {
    groups: groups.filter((g) => mayEdit(g.id)).map((g) => ({ value: String(g.id), label: g.app_name })),
    child_jobs: [...offered.map((x) => ({ value: String(x.id), label: `${x.id} ${x.description}` })), ...foreign.map((cid) => ({ value: String(cid), label: `#${cid}` }))],
    calendars: calendarChoices(calendars, job ? job.calendar : ''),
  };
  // What a newer admin accepts that this console has no field for: typed from its schema.
  const fields = [...JOB_FIELDS, ...schemaFields(schema, JOB_FIELDS, doc)];
  const ctl = controls(shownFields(fields, me().admin), job, { isNew, options: o, choices });
  const input = (/** @type {string} */ name) => /** @type {HTMLInputElement} */ (control(ctl, name).input);
  const [group, scheduleType, expr, zone, handler, alarms, calendar] = ['group_id', 'schedule_type', 'schedule_expr', 'time_zone', 'handler', 'alarm_contacts', 'calendar'].map(input);
  const glue = /** @type {HTMLSelectElement | undefined} */ (ctl.get('glue_type')?.input);
  const handlers = h('datalist', { id: 'handler-names' });
  const preview = h('div', { id: 'preview-box' });
  const msg = h('div');
  // Alarm e-mails need an SMTP server on the admin: say so while the field has addresses.
  const smtpNote = h('p', { class: 'warn', id: 'smtp-warning', role: 'status', hidden: true }, t('no_smtp'));
  const smtpCheck = () => { smtpNote.hidden = o.alarm_email || !alarms.value.trim(); };
  alarms.addEventListener('input', smtpCheck);
  smtpCheck();
  const suggest = async () => {
    try { handlers.replaceChildren(...(await suggestedHandlers(group.value)).map((n) => h('option', { value: n }))); } catch { handlers.replaceChildren(); }
  };
  group.addEventListener('change', suggest);
  suggest();
  const channelList = channelNames(input('alarm_channels'), me().admin);
  // The preview goes under the last field it reads: the calendar, whose skipped days it lists.
  const after = { calendar: preview, handler: handlers, alarm_contacts: smtpNote, alarm_channels: channelList };
  const form = h('form', { class: 'card job-form', id: 'job-form', onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    const body = formBody(fields, ctl, { isNew });
    if (glue) {
      // A new GLUE job (or one changing language) starts from a template, edited in the script editor.
      const type = glue.value;
      if (type !== 'BEAN' && !(job && job.id && job.glue_type === type)) body.glue_source = (job && job.glue_type === type && job.glue_source) || GLUE_TEMPLATES[type] || '';
    }
    clearErrors(form); msg.replaceChildren();
    try { isNew ? await api('POST', '/v1/jobs', body) : await api('PUT', `/v1/jobs/${job.id}`, body); go('#jobs'); } catch (e) { showError(form, msg, e); }
  } },
  JOB_SECTIONS.map((key) => rowsOf(ctl, key, after)).map((rows, i) => (rows.length ? section(JOB_SECTIONS[i], rows) : '')),
  h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('save')), h('button', { type: 'button', onclick: () => go('#jobs') }, t('cancel'))), msg);
  root.replaceChildren(h('h2', {}, isNew ? t('new_job') : `${t('jobs')} — #${job.id} ${job.description}`), form);
  const more = /** @type {HTMLTextAreaElement} */ (/** @type {unknown} */ (input('more_schedules')));
  previewer(/** @type {HTMLSelectElement} */ (/** @type {unknown} */ (scheduleType)), expr, zone, preview, {
    param: /** @type {HTMLInputElement | undefined} */ (ctl.get('param')?.input),
    more,
    calendar: /** @type {HTMLSelectElement} */ (/** @type {unknown} */ (calendar)),
  });
  /** @param {HTMLElement} el */
  const labelOf = (el) => /** @type {HTMLElement} */ (el.closest('label'));
  // Show only the fields that apply: no expression without a schedule, no handler for GLUE,
  // further schedules and a business calendar on a grid of fire times only.
  const toggle = () => {
    const grid = scheduleType.value === 'CRON' || scheduleType.value === 'FIX_RATE';
    labelOf(expr).hidden = scheduleType.value === 'NONE';
    labelOf(zone).hidden = scheduleType.value !== 'CRON';
    labelOf(more).hidden = !grid;
    labelOf(calendar).hidden = !grid;
    labelOf(handler).hidden = !!glue && glue.value !== 'BEAN';
  };
  scheduleType.addEventListener('change', toggle);
  if (glue) glue.addEventListener('change', toggle);
  toggle();
}
