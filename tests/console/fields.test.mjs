// @ts-check
// The forms' field tables (web/lib/fields.js), without a page: the request body each form
// makes from its inputs' values, and the fields made from the admin's schema of the job body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  JOB_FIELDS, JOB_SECTIONS, GROUP_FIELDS, USER_FIELDS, WORKFLOW_FIELDS,
  bodyOf, initialValue, shownFields, requestSchema, schemaFields, moreSchedules, moreSchedulesText,
} from '../../web/lib/fields.js';

/** An OpenAPI document whose job body has the console's fields and three it does not know. */
function docWithNewJobFields() {
  /** @param {object} s */
  const nullable = (s) => ({ anyOf: [s, { type: 'null' }] });
  /** @type {Record<string, object>} */
  const known = Object.fromEntries(JOB_FIELDS.map((f) => [f.name, nullable({ type: 'string' })]));
  return {
    openapi: '3.1.0',
    paths: { '/v1/jobs': { post: { requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/JobSpec' } } } } } } },
    components: {
      schemas: {
        JobSpec: {
          type: 'object',
          properties: {
            ...known,
            weight: nullable({ type: 'integer', minimum: 0, maximum: 9, description: 'runs of higher weight are sent first' }),
            tier: nullable({ $ref: '#/components/schemas/Tier' }),
            dry_run: { type: ['boolean', 'null'] },
            labels: nullable({ type: 'array', items: { type: 'string' } }),
            note: { type: 'string', maxLength: 80 },
          },
        },
        Tier: { type: 'string', enum: ['gold', 'silver'] },
      },
    },
  };
}

test('every field of a table is named once, and every job field shown has a section of the form', () => {
  for (const table of [JOB_FIELDS, GROUP_FIELDS, USER_FIELDS, WORKFLOW_FIELDS]) {
    const names = table.map((f) => f.name);
    assert.deepEqual(names, [...new Set(names)]);
  }
  for (const f of shownFields(JOB_FIELDS, true)) assert.ok(f.section && JOB_SECTIONS.includes(f.section), `${f.name} has a section`);
});

test('the job body: numbers as numbers, an empty key and a zone without CRON left out', () => {
  const values = {
    group_id: '3', glue_type: 'BEAN', description: 'nightly', key: '  ', owner: 'ops', schedule_type: 'FIX_RATE', schedule_expr: '30',
    time_zone: 'Europe/Berlin', misfire_strategy: 'DO_NOTHING', handler: 'demoJobHandler', param: '', route_strategy: 'FIRST',
    block_strategy: 'SERIAL_EXECUTION', timeout_secs: '', retry_count: '2', alarm_contacts: '', child_job_ids: ['4', '7'],
  };
  assert.deepEqual(bodyOf(JOB_FIELDS, values), {
    group_id: 3, glue_type: 'BEAN', description: 'nightly', owner: 'ops', schedule_type: 'FIX_RATE', schedule_expr: '30',
    misfire_strategy: 'DO_NOTHING', handler: 'demoJobHandler', param: '', route_strategy: 'FIRST', block_strategy: 'SERIAL_EXECUTION',
    retry_count: 2, alarm_contacts: '', child_job_ids: [4, 7],
  });
  const cron = bodyOf(JOB_FIELDS, { ...values, schedule_type: 'CRON', key: ' nightly-report ' });
  assert.equal(cron.time_zone, 'Europe/Berlin', 'the zone goes with CRON');
  assert.equal(cron.key, 'nightly-report', 'the key is trimmed');
});

test('further schedules: a line each, a zone after @, none for a job without a grid', () => {
  const typed = ' CRON 0 0 18 * * ? @Europe/Berlin \n\nfix_rate 90\n';
  const more = moreSchedules(typed);
  assert.deepEqual(more, [
    { schedule_type: 'CRON', schedule_expr: '0 0 18 * * ?', time_zone: 'Europe/Berlin' },
    { schedule_type: 'FIX_RATE', schedule_expr: '90' },
  ]);
  assert.equal(moreSchedulesText(more), 'CRON 0 0 18 * * ? @Europe/Berlin\nFIX_RATE 90');
  assert.deepEqual(moreSchedules(moreSchedulesText(more)), more, 'read back as written');
  const values = { schedule_type: 'CRON', schedule_expr: '0 0 9 * * ?', more_schedules: typed };
  assert.equal(/** @type {unknown[]} */ (bodyOf(JOB_FIELDS, values).more_schedules).length, 2);
  assert.deepEqual(bodyOf(JOB_FIELDS, { ...values, schedule_type: 'NONE' }).more_schedules, [], 'hidden without a grid');
  const field = JOB_FIELDS.find((f) => f.name === 'more_schedules');
  assert.equal(field?.read?.({ more_schedules: more }), 'CRON 0 0 18 * * ? @Europe/Berlin\nFIX_RATE 90');
});

test('a field the user is not shown is not sent: the GLUE type of a non-admin', () => {
  const shown = shownFields(JOB_FIELDS, false).map((f) => f.name);
  assert.ok(!shown.includes('glue_type'));
  assert.ok(shownFields(JOB_FIELDS, true).some((f) => f.name === 'glue_type'));
  const values = Object.fromEntries(shown.map((n) => [n, '']));
  assert.ok(!('glue_type' in bodyOf(JOB_FIELDS, values)));
  for (const hidden of ['group', 'glue_source', 'running']) assert.ok(!shown.includes(hidden), `${hidden} is no input of the form`);
});

test('a job is read into the form as it is, a new one gets the initial values', () => {
  const job = { group_id: 2, description: 'd', retry_count: 0, child_job_ids: [5], schedule_type: 'CRON', time_zone: null };
  const read = Object.fromEntries(JOB_FIELDS.map((f) => [f.name, initialValue(f, job)]));
  assert.equal(read.group_id, '2');
  assert.equal(read.retry_count, '0');
  assert.deepEqual(read.child_job_ids, ['5']);
  assert.equal(read.time_zone, '');
  const fresh = Object.fromEntries(JOB_FIELDS.map((f) => [f.name, initialValue(f, null)]));
  assert.deepEqual([fresh.schedule_type, fresh.schedule_expr, fresh.route_strategy, fresh.glue_type, fresh.retry_count], ['CRON', '0 * * * * ?', 'FIRST', 'BEAN', '0']);
});

test('the group body: listed addresses make a manual group, none an automatic one', () => {
  const values = { app_name: 'demo', title: '', addresses: ' http://a:9999 , ,http://b:9999', keep_logs: true, insecure_no_token: false };
  assert.deepEqual(bodyOf(GROUP_FIELDS, values), {
    app_name: 'demo', addresses: ['http://a:9999', 'http://b:9999'], address_type: 'manual', keep_logs: true, insecure_no_token: false,
  });
  assert.equal(bodyOf(GROUP_FIELDS, { ...values, addresses: '' }).address_type, 'auto');
  assert.equal(initialValue(/** @type {any} */ (GROUP_FIELDS.find((f) => f.name === 'addresses')), { addresses: ['x', 'y'] }), 'x,y');
  assert.deepEqual(['keep_logs', 'insecure_no_token'].map((n) => initialValue(/** @type {any} */ (GROUP_FIELDS.find((f) => f.name === n)), null)), [true, false]);
});

test('the user body: the name only for a new user, an empty password left out, a role per group', () => {
  const values = { username: 'carol', password: '', role: 'user', group_roles: ['1:viewer', '3:group_admin'] };
  const roles = [{ group_id: 1, role: 'viewer' }, { group_id: 3, role: 'group_admin' }];
  assert.deepEqual(bodyOf(USER_FIELDS, values, { isNew: true }), { username: 'carol', role: 'user', group_roles: roles });
  assert.deepEqual(bodyOf(USER_FIELDS, { ...values, password: 'new-secret' }), { password: 'new-secret', role: 'user', group_roles: roles });
  const field = /** @type {any} */ (USER_FIELDS.find((f) => f.name === 'group_roles'));
  assert.deepEqual(initialValue(field, { group_roles: roles }), ['1:viewer', '3:group_admin']);
  assert.deepEqual(initialValue(field, null), []);
});

test('the workflow body: its fields, the graph added by the page', () => {
  const values = { name: 'w', description: '', schedule_type: 'CRON', schedule_expr: '0 0 3 * * ?', time_zone: 'Asia/Shanghai', misfire_strategy: 'DO_NOTHING', max_instances: '0', on_limit: 'queue', alarm_channels: 'ops' };
  assert.deepEqual(bodyOf(WORKFLOW_FIELDS, values), { ...values, max_instances: 0 });
});

test("the job body's schema is found through the POST /v1/jobs operation, inline or by reference", () => {
  const doc = docWithNewJobFields();
  assert.ok(requestSchema(doc, 'post', '/v1/jobs').properties.weight);
  const inline = { paths: { '/v1/jobs': { post: { requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { a: { type: 'string' } } } } } } } } } };
  assert.deepEqual(Object.keys(requestSchema(inline, 'post', '/v1/jobs').properties), ['a']);
  assert.equal(requestSchema(doc, 'put', '/v1/jobs'), null);
  assert.equal(requestSchema({}, 'post', '/v1/jobs'), null);
  // A reference in a loop is no schema, not a hang.
  assert.equal(requestSchema({ paths: doc.paths, components: { schemas: { JobSpec: { $ref: '#/components/schemas/JobSpec' } } } }, 'post', '/v1/jobs'), null);
});

test('a job body property the table does not know becomes a field typed from its schema', () => {
  const doc = docWithNewJobFields();
  const extra = schemaFields(requestSchema(doc, 'post', '/v1/jobs'), JOB_FIELDS, doc);
  assert.deepEqual(extra.map((f) => [f.name, f.kind, f.section]), [
    ['weight', 'number', 'other'], ['tier', 'select', 'other'], ['dry_run', 'checkbox', 'other'], ['note', 'text', 'other'],
  ], 'the known fields are left alone, and a list has no input');
  const [weight, tier, , note] = extra;
  assert.deepEqual(weight.attrs, { min: '0', max: '9', step: '1' });
  assert.equal(weight.note, 'runs of higher weight are sent first');
  assert.deepEqual(tier.choices?.map((c) => c.value), ['', 'gold', 'silver']);
  assert.deepEqual(note.attrs, { maxlength: '80' });
});

test('an unknown property lands in the body, typed; left empty it is left out', () => {
  const doc = docWithNewJobFields();
  const fields = [...JOB_FIELDS, ...schemaFields(requestSchema(doc, 'post', '/v1/jobs'), JOB_FIELDS, doc)];
  const base = { description: 'x', schedule_type: 'NONE' };
  const body = bodyOf(fields, { ...base, weight: '7', tier: 'gold', dry_run: true, note: 'hello' });
  assert.deepEqual([body.weight, body.tier, body.dry_run, body.note], [7, 'gold', true, 'hello']);
  const empty = bodyOf(fields, { ...base, weight: '', tier: '', dry_run: false, note: '' });
  assert.ok(!('weight' in empty) && !('tier' in empty) && !('note' in empty));
  assert.equal(empty.dry_run, false);
  // Editing a job reads its value of the new field.
  const weight = /** @type {any} */ (fields.find((f) => f.name === 'weight'));
  assert.equal(initialValue(weight, { weight: 4 }), '4');
});

test('without a schema (an admin that gives none) the form has only its own fields', () => {
  assert.deepEqual(schemaFields(null, JOB_FIELDS), []);
  assert.deepEqual(schemaFields({ type: 'object' }, JOB_FIELDS), []);
});

test("the job's flow control: a bounded priority, and a concurrency key that an emptied field removes", () => {
  const priority = /** @type {import('../../web/lib/fields.js').Field} */ (JOB_FIELDS.find((f) => f.name === 'priority'));
  const key = /** @type {import('../../web/lib/fields.js').Field} */ (JOB_FIELDS.find((f) => f.name === 'concurrency_key'));
  assert.deepEqual([priority.kind, priority.section, key.kind, key.section], ['number', 'flow', 'text', 'flow']);
  assert.deepEqual([priority.attrs?.min, priority.attrs?.max], ['-1000', '1000']);
  assert.equal(initialValue(priority, null), '0', 'a new job starts at priority 0');
  assert.equal(initialValue(key, null), '');
  assert.deepEqual([initialValue(priority, { priority: -5 }), initialValue(key, { concurrency_key: 'warehouse-db' })], ['-5', 'warehouse-db']);
  const base = { description: 'x', schedule_type: 'NONE' };
  const body = bodyOf(JOB_FIELDS, { ...base, priority: '10', concurrency_key: ' warehouse-db ' });
  assert.deepEqual([body.priority, body.concurrency_key], [10, 'warehouse-db']);
  // An emptied key is sent as '' (the job leaves its limit); an emptied priority is left out (kept).
  const emptied = bodyOf(JOB_FIELDS, { ...base, priority: '', concurrency_key: '' });
  assert.ok(!('priority' in emptied));
  assert.equal(emptied.concurrency_key, '');
  assert.ok(JOB_SECTIONS.indexOf('flow') > JOB_SECTIONS.indexOf('executor') && JOB_SECTIONS.indexOf('flow') < JOB_SECTIONS.indexOf('other'));
  // A schema that lists them (the admin's does) adds no second input.
  const schema = { type: 'object', properties: { priority: { type: 'integer' }, concurrency_key: { type: 'string' } } };
  assert.deepEqual(schemaFields(schema, JOB_FIELDS), []);
});

test('the business calendar of jobs and workflows: in the schedule, sent for CRON and FIX_RATE only', () => {
  for (const table of [JOB_FIELDS, WORKFLOW_FIELDS]) {
    const calendar = /** @type {import('../../web/lib/fields.js').Field} */ (table.find((f) => f.name === 'calendar'));
    assert.deepEqual([calendar.kind, calendar.section, calendar.options], ['select', 'schedule', 'calendars']);
    assert.equal(initialValue(calendar, null), '', 'a new one names none');
    assert.equal(initialValue(calendar, { calendar: 'CN' }), 'CN');
    const base = { schedule_expr: '0 0 9 * * ?', calendar: ' CN ' };
    assert.equal(bodyOf(table, { ...base, schedule_type: 'CRON' }).calendar, 'CN');
    assert.equal(bodyOf(table, { ...base, schedule_type: 'FIX_RATE' }).calendar, 'CN');
    // The admin refuses a calendar on FIX_DELAY and drops it without a schedule: '' says none.
    assert.equal(bodyOf(table, { ...base, schedule_type: 'FIX_DELAY' }).calendar, '');
    assert.equal(bodyOf(table, { ...base, schedule_type: 'NONE' }).calendar, '');
    assert.equal(bodyOf(table, { ...base, schedule_type: 'CRON', calendar: '' }).calendar, '', 'emptied: the calendar is taken away');
  }
  // The admin's schema lists it: no second input in "other".
  assert.deepEqual(schemaFields({ type: 'object', properties: { calendar: { type: 'string', maxLength: 64 } } }, JOB_FIELDS), []);
});
