// @ts-check
// The job form's inputs built from its field table and the admin's schema (web/lib/forms.js)
// in jsdom's DOM: a property of the job body the table does not know gets an input in the
// "other" section, and what is typed there goes into the request body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('<!doctype html><html><body></body></html>', { url: 'http://127.0.0.1/console/' });
// The modules use the browser's globals: give them jsdom's before they load.
for (const name of /** @type {const} */ (['window', 'document', 'Node', 'HTMLElement', 'HTMLInputElement', 'HTMLSelectElement', 'localStorage', 'navigator'])) {
  Object.defineProperty(globalThis, name, { value: window[name], configurable: true, writable: true });
}
const { controls, formBody, rowsOf, control } = await import('../../web/lib/forms.js');
const { JOB_FIELDS, JOB_SECTIONS, schemaFields, shownFields } = await import('../../web/lib/fields.js');
const { calendarChoices } = await import('../../web/lib/calendars.js');

/** What `/v1/options` lists, enough for the job form's selects. */
const OPTIONS = {
  schedule_types: ['NONE', 'CRON', 'FIX_RATE'].map((value) => ({ value })),
  misfire_strategies: ['DO_NOTHING', 'FIRE_ONCE_NOW', 'CATCH_UP'].map((value) => ({ value })),
  route_strategies: ['FIRST', 'LAST'].map((value) => ({ value })),
  block_strategies: ['SERIAL_EXECUTION', 'DISCARD_LATER'].map((value) => ({ value })),
  glue_types: ['BEAN', 'GLUE_SHELL'].map((value) => ({ value })),
};
const CHOICES = {
  groups: [{ value: '1', label: 'demo' }, { value: '2', label: 'other' }],
  child_jobs: [{ value: '5', label: '5 report' }, { value: '6', label: '6 cleanup' }],
  calendars: calendarChoices([{ name: 'CN', time_zone: 'Asia/Shanghai' }, { name: 'DE', time_zone: 'Europe/Berlin' }]),
};
/** A job body schema with two properties the console's table does not know. */
const SCHEMA = {
  type: 'object',
  properties: {
    description: { type: 'string' },
    weight: { anyOf: [{ type: 'integer', minimum: 0, maximum: 9 }, { type: 'null' }] },
    tier: { type: 'string', enum: ['gold', 'silver'] },
  },
};

/**
 * The job form's inputs for `job` (null: a new job), with the schema's extra fields.
 * @param {any} job
 */
function jobForm(job) {
  const fields = [...JOB_FIELDS, ...schemaFields(SCHEMA, JOB_FIELDS)];
  const ctl = controls(shownFields(fields, true), job, { isNew: !job, options: OPTIONS, choices: CHOICES });
  const form = window.document.createElement('form');
  for (const key of JOB_SECTIONS) for (const [row] of rowsOf(ctl, key)) form.append(/** @type {Node} */ (row));
  return { fields, ctl, form };
}

/**
 * The form's element named `name`.
 * @param {HTMLFormElement} form
 * @param {string} name
 */
const named = (form, name) => /** @type {HTMLInputElement} */ (form.querySelector(`[name=${name}]`));

test('an unknown property of the job body gets an input in the "other" section, and lands in the body', () => {
  const { fields, ctl, form } = jobForm(null);
  assert.deepEqual(rowsOf(ctl, 'other').map(([row]) => /** @type {HTMLElement} */ (row).querySelector('span')?.textContent), ['weight', 'tier'],
    'labelled by their names, in the schema order');
  const weight = named(form, 'weight');
  assert.equal(weight.type, 'number');
  assert.deepEqual([weight.min, weight.max, weight.step], ['0', '9', '1']);
  const tier = /** @type {HTMLSelectElement} */ (/** @type {unknown} */ (named(form, 'tier')));
  assert.deepEqual([...tier.options].map((o) => o.value), ['', 'gold', 'silver']);
  assert.ok(!('weight' in formBody(fields, ctl, { isNew: true })), 'left empty, the property is left out');
  weight.value = '7';
  tier.value = 'silver';
  named(form, 'description').value = 'nightly report';
  const body = formBody(fields, ctl, { isNew: true });
  assert.equal(body.weight, 7);
  assert.equal(body.tier, 'silver');
  assert.equal(body.description, 'nightly report');
  assert.equal(body.group_id, 1, 'the first group is chosen in a new job');
});

test("an existing job's value of the unknown property is shown, and sent back", () => {
  const job = { id: 9, group_id: 2, description: 'd', schedule_type: 'CRON', schedule_expr: '0 0 3 * * ?', time_zone: 'UTC', misfire_strategy: 'CATCH_UP',
    handler: 'h', param: '', route_strategy: 'LAST', block_strategy: 'SERIAL_EXECUTION', retry_count: 1, timeout_secs: 0, child_job_ids: [6], glue_type: 'BEAN', weight: 4 };
  const { fields, ctl, form } = jobForm(job);
  assert.equal(named(form, 'weight').value, '4');
  const body = formBody(fields, ctl, { isNew: false });
  assert.deepEqual([body.weight, body.group_id, body.misfire_strategy, body.route_strategy, body.child_job_ids, body.time_zone], [4, 2, 'CATCH_UP', 'LAST', [6], 'UTC']);
  // The admin's enum selects explain the value chosen, under an id the page refers to.
  assert.equal(/** @type {HTMLSelectElement} */ (control(ctl, 'misfire_strategy').input).getAttribute('aria-describedby'), 'help-misfire_strategy');
});

test('data reaches the form as text: a job description with markup stays text', () => {
  const xss = '<img src=x onerror="window.__xss=1">';
  const { form } = jobForm({ description: xss, child_job_ids: [] });
  assert.equal(named(form, 'description').value, xss);
  assert.equal(form.querySelectorAll('img').length, 0);
});

test("the business calendar: none first, then the admin's calendars; sent with a grid of fire times only", () => {
  const { fields, ctl, form } = jobForm(null);
  const calendar = /** @type {HTMLSelectElement} */ (/** @type {unknown} */ (named(form, 'calendar')));
  assert.ok(rowsOf(ctl, 'schedule').some(([row]) => row === calendar.closest('label')), 'in the schedule section');
  assert.deepEqual([...calendar.options].map((o) => [o.value, o.textContent]), [['', '(none: every day)'], ['CN', 'CN (Asia/Shanghai)'], ['DE', 'DE (Europe/Berlin)']]);
  assert.equal(calendar.value, '', 'a new job names none');
  assert.equal(formBody(fields, ctl, { isNew: true }).calendar, '');
  calendar.value = 'CN';
  assert.equal(formBody(fields, ctl, { isNew: true }).calendar, 'CN', 'CRON, the initial type');
  const type = /** @type {HTMLSelectElement} */ (/** @type {unknown} */ (named(form, 'schedule_type')));
  type.value = 'FIX_RATE';
  assert.equal(formBody(fields, ctl, { isNew: true }).calendar, 'CN');
  type.value = 'NONE';
  assert.equal(formBody(fields, ctl, { isNew: true }).calendar, '', 'no schedule: the calendar picked goes');
});

test("a job's calendar that the list does not hold stays chosen, so saving keeps it", () => {
  const job = { id: 3, group_id: 1, description: 'd', schedule_type: 'CRON', schedule_expr: '0 0 9 * * ?', calendar: 'JP', child_job_ids: [] };
  const fields = [...JOB_FIELDS];
  const choices = { ...CHOICES, calendars: calendarChoices([{ name: 'CN' }], job.calendar) };
  const ctl = controls(shownFields(fields, true), job, { isNew: false, options: OPTIONS, choices });
  const calendar = /** @type {HTMLSelectElement} */ (control(ctl, 'calendar').input);
  assert.deepEqual([...calendar.options].map((o) => o.value), ['', 'CN', 'JP']);
  assert.equal(calendar.value, 'JP');
  assert.equal(formBody(fields, ctl, { isNew: false }).calendar, 'JP');
});
