// @ts-check
// The console's forms as data: one table per form names each field once, with what input it
// is, where it goes, where a select's choices come from, how it is read from the object being
// edited and how it goes into the request body. `forms.js` builds the inputs from a table and
// reads them back; `bodyOf` here makes the body. A field of the job body that the table does
// not know (a newer admin's) comes from the API's own schema (`schemaFields`), so it can be
// set without a console change.
//
// Nothing here touches the page: the tables and the functions are tested under Node.

/**
 * How a field is entered. `none`: the console knows the field but shows no input for it
 * (another page edits it, or its value follows from other fields through `parse`).
 * `roles`: a role (or none) for each of a list's choices (the groups), held as `id:role` strings.
 * @typedef {'text'|'password'|'number'|'select'|'multiselect'|'checkbox'|'checkboxes'|'roles'|'textarea'|'none'} FieldKind
 */

/**
 * A choice of a select: `label` is shown as is, `key` is translated; neither: the value.
 * @typedef {object} Choice
 * @property {string} value
 * @property {string} [label]
 * @property {string} [key]
 */

/**
 * What an input holds: text, a checkbox's state, or the values chosen in a multiple select or
 * a set of checkboxes.
 * @typedef {string | boolean | string[] | undefined} RawValue
 * @typedef {Record<string, RawValue>} RawValues
 */

/**
 * One field of a form.
 * @typedef {object} Field
 * @property {string} name the key in the request body and in the object edited, and the input's name
 * @property {FieldKind} kind
 * @property {string} [section] the form's section it is shown in
 * @property {string} [label] the label's translation key (default: `name`)
 * @property {string} [editLabel] the label's translation key when an existing object is edited
 * @property {string} [help] translation key of a line under the input
 * @property {string} [note] a line under the input, as is (an API schema's description)
 * @property {string} [options] where a select's choices come from: a list of `/v1/options`
 *   (with `prefix`), or one the page gives by this name
 * @property {string} [prefix] translation prefix of a `/v1/options` list's values (`sched` → `sched_CRON`)
 * @property {Choice[]} [choices] a select's fixed choices
 * @property {RawValue} [initial] the input's value in a form for a new object
 * @property {string} [hint] translation key of the input's placeholder
 * @property {string} [tip] translation key of the input's tooltip
 * @property {Record<string, string>} [attrs] further attributes of the input
 * @property {string} [input] the input's name, when it is not `name`
 * @property {boolean} [adminOnly] shown to (and sent by) admins only
 * @property {boolean} [onlyNew] entered and sent only when the object is created
 * @property {(obj: any) => RawValue} [read] the input's value for an existing object (default: `obj[name]`)
 * @property {(raw: RawValue, values: RawValues) => unknown} [parse] the body's value from the
 *   input's (and the other inputs') values; undefined leaves the field out of the body
 */

/** @param {RawValue} v */
const text = (v) => (v === undefined ? '' : String(v));
/** Empty: left out of the body (the admin keeps the value it has, or its default). @param {RawValue} v */
const textOrNothing = (v) => (text(v) === '' ? undefined : text(v));
/** @param {RawValue} v */
const numberOrNothing = (v) => (v === undefined || v === '' ? undefined : Number(v));
/** @param {RawValue} v */
const ids = (v) => (Array.isArray(v) ? v.map(Number) : []);
/** `id:role` strings as the user body's `group_roles`. @param {RawValue} v */
const grants = (v) => (Array.isArray(v) ? v.map((x) => { const [id, role] = x.split(':'); return { group_id: Number(id), role }; }) : []);
/** The zone applies to CRON only; left out, an object keeps the one it has. @param {RawValue} v @param {RawValues} values */
const cronZone = (v, values) => (values.schedule_type === 'CRON' && v ? text(v) : undefined);
/** A comma-separated list, without blanks. @param {RawValue} v */
const list = (v) => text(v).split(',').map((a) => a.trim()).filter(Boolean);

/**
 * A job's further schedule, as its body gives it.
 * @typedef {{schedule_type: string, schedule_expr: string, time_zone?: string}} MoreSchedule
 */

/**
 * A job's further schedules, a line each: `CRON <expression> [@zone]` or `FIX_RATE <seconds>`,
 * as `chime job add --also` takes them.
 * @param {MoreSchedule[] | undefined} more
 */
export const moreSchedulesText = (more) => (more || []).map((m) => `${m.schedule_type} ${m.schedule_expr}${m.time_zone ? ` @${m.time_zone}` : ''}`).join('\n');

/**
 * The lines of the further schedules' field as the body's `more_schedules`. A line is sent as
 * typed even when it is wrong: the admin's answer names the entry at fault.
 * @param {RawValue} v
 * @returns {MoreSchedule[]}
 */
export const moreSchedules = (v) => text(v).split('\n').map((l) => l.trim()).filter(Boolean).map((line) => {
  const [kind, ...rest] = line.split(/\s+/);
  const last = rest[rest.length - 1] || '';
  const zone = rest.length > 1 && last.startsWith('@') ? last.slice(1) : '';
  const expr = (zone ? rest.slice(0, -1) : rest).join(' ');
  return { schedule_type: kind.toUpperCase(), schedule_expr: expr, ...(zone ? { time_zone: zone } : {}) };
});

/** Whether a schedule type has a grid of fire times (CRON, FIX_RATE). @param {RawValues} values */
const onGrid = (values) => values.schedule_type === 'CRON' || values.schedule_type === 'FIX_RATE';
/** Only a grid (CRON, FIX_RATE) has further schedules: with another type the field is hidden and sends none. @param {RawValue} v @param {RawValues} values */
const moreOfGrid = (v, values) => (onGrid(values) ? moreSchedules(v) : []);
/**
 * A business calendar keeps a grid to its business days; another type has none (the admin
 * refuses one on FIX_DELAY), so the hidden field sends '' and a calendar picked earlier goes.
 * @param {RawValue} v @param {RawValues} values
 */
const calendarOfGrid = (v, values) => (onGrid(values) ? text(v).trim() : '');

/** The job form. Sections in order: basics, schedule, executor, flow control, alarms, advanced. */
export const JOB_FIELDS = /** @type {Field[]} */ ([
  { name: 'group_id', kind: 'select', section: 'basics', options: 'groups', parse: numberOrNothing },
  // GLUE scripts run on the executor as written: admins only, as the API.
  { name: 'glue_type', kind: 'select', section: 'basics', options: 'glue_types', prefix: 'glue', initial: 'BEAN', adminOnly: true },
  { name: 'description', kind: 'text', section: 'basics' },
  // The job's stable name in its group (jobs as code match on it); empty: `job-<id>`.
  { name: 'key', kind: 'text', section: 'basics', hint: 'key_hint', parse: (v) => text(v).trim() || undefined },
  { name: 'owner', kind: 'text', section: 'basics' },
  { name: 'schedule_type', kind: 'select', section: 'schedule', options: 'schedule_types', prefix: 'sched', initial: 'CRON' },
  // A job without a schedule keeps no expression (the field is hidden, not emptied, by the form).
  { name: 'schedule_expr', kind: 'text', section: 'schedule', initial: '0 * * * * ?', parse: (v, values) => (values.schedule_type === 'NONE' ? '' : text(v)) },
  { name: 'time_zone', kind: 'text', section: 'schedule', attrs: { placeholder: 'UTC, Asia/Shanghai…' }, parse: cronZone },
  // Further schedules, a line each; the job fires at the times of all of them.
  { name: 'more_schedules', kind: 'textarea', section: 'schedule', help: 'more_schedules_help', attrs: { rows: '2', spellcheck: 'false', autocomplete: 'off', placeholder: 'CRON 0 0 18 * * ? @Europe/Berlin' }, read: (j) => moreSchedulesText(j.more_schedules), parse: moreOfGrid },
  // The business calendar (by name; '' none) whose business days the job fires on. The page
  // lists the admin's calendars.
  { name: 'calendar', kind: 'select', section: 'schedule', options: 'calendars', help: 'calendar_help', initial: '', parse: calendarOfGrid },
  { name: 'misfire_strategy', kind: 'select', section: 'schedule', options: 'misfire_strategies', prefix: 'misfire', initial: 'DO_NOTHING' },
  // Suggestions: the handlers the group's executors run and its jobs use (the page fills the list).
  { name: 'handler', kind: 'text', section: 'executor', tip: 'handler_suggest', attrs: { list: 'handler-names', autocomplete: 'off' } },
  { name: 'param', kind: 'text', section: 'executor' },
  { name: 'route_strategy', kind: 'select', section: 'executor', options: 'route_strategies', prefix: 'route', initial: 'FIRST' },
  { name: 'block_strategy', kind: 'select', section: 'executor', options: 'block_strategies', prefix: 'block', initial: 'SERIAL_EXECUTION' },
  { name: 'timeout_secs', kind: 'number', section: 'executor', initial: '0', parse: numberOrNothing },
  // Flow control: the place of the job's runs in the queue of a full limit, and the limit (by
  // name, set on the Queue page) its runs share with every job of the same key. An emptied key
  // is sent as '' (the job leaves its limit); an emptied priority is left out (kept).
  { name: 'priority', kind: 'number', section: 'flow', help: 'priority_help', initial: '0', attrs: { min: '-1000', max: '1000', step: '1' }, parse: numberOrNothing },
  { name: 'concurrency_key', kind: 'text', section: 'flow', help: 'concurrency_key_help', attrs: { maxlength: '128', pattern: '[A-Za-z0-9._\\-]+', autocomplete: 'off', spellcheck: 'false', placeholder: 'warehouse-db' }, parse: (v) => text(v).trim() },
  { name: 'retry_count', kind: 'number', section: 'alarms', initial: '0', parse: numberOrNothing },
  { name: 'alarm_contacts', kind: 'text', section: 'alarms', attrs: { placeholder: 'ops@example.com, …' } },
  // Names of alarm channels, comma-separated; empty: the group's. The page suggests the names.
  { name: 'alarm_channels', kind: 'text', section: 'alarms', help: 'alarm_channels_help', attrs: { list: 'channel-names', autocomplete: 'off', spellcheck: 'false', placeholder: 'ops-slack, oncall-dingtalk' } },
  { name: 'alarm_policy', kind: 'text', section: 'alarms', help: 'alarm_policy_help', attrs: { autocomplete: 'off', spellcheck: 'false', placeholder: 'after_failures=3, on_recovery' } },
  { name: 'alarm_language', kind: 'select', section: 'alarms', help: 'alarm_language_help', choices: [{ value: '', key: 'alarm_language_default' }, { value: 'en', key: 'alarm_language_en' }, { value: 'zh', key: 'alarm_language_zh' }], initial: '' },
  { name: 'child_job_ids', kind: 'multiselect', section: 'advanced', options: 'child_jobs', parse: ids },
  // Known, but not inputs of this form: `group_id` names the group, the script editor edits
  // the source (the form sends a template for a new GLUE job), start and stop run the job.
  { name: 'group', kind: 'none' },
  { name: 'glue_source', kind: 'none' },
  { name: 'running', kind: 'none' },
]);

/** The sections of the job form, in order; `other` holds the fields only the API's schema knows. */
export const JOB_SECTIONS = ['basics', 'schedule', 'executor', 'flow', 'alarms', 'advanced', 'other'];

/** The executor group form (admins only). */
export const GROUP_FIELDS = /** @type {Field[]} */ ([
  { name: 'app_name', kind: 'text' },
  { name: 'title', kind: 'text', parse: textOrNothing },
  { name: 'addresses', kind: 'text', attrs: { placeholder: 'http://host:port,…' }, read: (g) => g.addresses.join(','), parse: list },
  // Listed addresses make a manual group; none, executors register themselves.
  { name: 'address_type', kind: 'none', parse: (_, values) => (list(values.addresses).length ? 'manual' : 'auto') },
  // Chime executors send each finished run's log; kept here, it outlives the executor.
  { name: 'keep_logs', kind: 'checkbox', initial: true },
  // XXL-JOB's "no token" setup, for legacy executors only: off unless an admin turns it on.
  { name: 'insecure_no_token', kind: 'checkbox', initial: false, help: 'insecure_no_token_help' },
  // The alarm channels of the group's jobs that name none (comma-separated names).
  { name: 'alarm_channels', kind: 'text', help: 'group_alarm_channels_help', attrs: { list: 'channel-names', autocomplete: 'off', spellcheck: 'false' } },
]);

/** The user form (admins only). */
export const USER_FIELDS = /** @type {Field[]} */ ([
  // A user's name never changes: shown, but not sent, when editing.
  { name: 'username', kind: 'text', onlyNew: true },
  // Empty when editing: the password stays.
  { name: 'password', kind: 'password', editLabel: 'new_password', attrs: { autocomplete: 'new-password' }, read: () => '', parse: textOrNothing },
  { name: 'role', kind: 'select', choices: [{ value: 'user', key: 'role_user' }, { value: 'admin', key: 'role_admin' }], initial: 'user' },
  { name: 'group_roles', kind: 'roles', label: 'groups', options: 'groups', input: 'role_in', help: 'group_roles_help', read: (u) => (u.group_roles || []).map((/** @type {any} */ g) => `${g.group_id}:${g.role}`), parse: grants },
]);

/** The workflow form's fields above its graph (admins only); the page adds the graph. */
export const WORKFLOW_FIELDS = /** @type {Field[]} */ ([
  { name: 'name', kind: 'text', section: 'workflow' },
  { name: 'description', kind: 'text', section: 'workflow', label: 'wf_description' },
  { name: 'schedule_type', kind: 'select', section: 'schedule', options: 'schedule_types', prefix: 'sched', initial: 'NONE' },
  { name: 'schedule_expr', kind: 'text', section: 'schedule' },
  { name: 'time_zone', kind: 'text', section: 'schedule', attrs: { placeholder: 'UTC, Asia/Shanghai…' }, parse: cronZone },
  { name: 'calendar', kind: 'select', section: 'schedule', options: 'calendars', help: 'calendar_help', initial: '', parse: calendarOfGrid },
  { name: 'misfire_strategy', kind: 'select', section: 'schedule', options: 'misfire_strategies', prefix: 'misfire', initial: 'DO_NOTHING' },
  { name: 'max_instances', kind: 'number', section: 'concurrency', help: 'max_instances_help', initial: '0', attrs: { min: '0', max: '10000' }, parse: numberOrNothing },
  { name: 'on_limit', kind: 'select', section: 'concurrency', choices: [{ value: 'skip', key: 'on_limit_skip' }, { value: 'queue', key: 'on_limit_queue' }], initial: 'skip' },
  { name: 'alarm_channels', kind: 'text', section: 'alarms', help: 'wf_alarm_channels_help', attrs: { list: 'channel-names', autocomplete: 'off', spellcheck: 'false', placeholder: 'ops-slack, oncall-dingtalk' } },
  { name: 'definition', kind: 'none' },
]);

/**
 * The value an input starts with: the object's, or for a new object the field's initial one.
 * @param {Field} f
 * @param {any} obj the object edited, or null for a new one
 * @returns {RawValue}
 */
export function initialValue(f, obj) {
  if (!obj) return f.initial ?? (f.kind === 'multiselect' || f.kind === 'checkboxes' || f.kind === 'roles' ? [] : f.kind === 'checkbox' ? false : '');
  if (f.read) return f.read(obj);
  const v = obj[f.name];
  if (f.kind === 'checkbox') return !!v;
  if (f.kind === 'multiselect' || f.kind === 'checkboxes' || f.kind === 'roles') return Array.isArray(v) ? v.map(String) : [];
  return v === undefined || v === null ? '' : String(v);
}

/**
 * The default way from an input's value to the body's, by kind.
 * @param {FieldKind} kind
 * @returns {(raw: RawValue, values: RawValues) => unknown}
 */
function defaultParse(kind) {
  switch (kind) {
    case 'number': return numberOrNothing;
    case 'checkbox': return (v) => !!v;
    case 'multiselect': case 'checkboxes': case 'roles': return (v) => (Array.isArray(v) ? v : []);
    case 'none': return () => undefined;
    default: return text;
  }
}

/**
 * The request body of a form: each field shown (its name in `values`) and each `none` field
 * with a `parse`, in table order; a field whose value parses to undefined is left out.
 * @param {Field[]} fields
 * @param {RawValues} values the inputs' values by field name
 * @param {{isNew?: boolean}} [opts] `isNew`: the object is being created (`onlyNew` fields go too)
 * @returns {Record<string, unknown>}
 */
export function bodyOf(fields, values, opts = {}) {
  /** @type {Record<string, unknown>} */
  const body = {};
  for (const f of fields) {
    if (f.onlyNew && !opts.isNew) continue;
    if (f.kind !== 'none' && !(f.name in values)) continue;
    const v = (f.parse || defaultParse(f.kind))(values[f.name], values);
    if (v !== undefined) body[f.name] = v;
  }
  return body;
}

/**
 * The fields a user is shown: admin-only ones only to admins, none of the `none` ones.
 * @param {Field[]} fields
 * @param {boolean} admin
 */
export function shownFields(fields, admin) {
  return fields.filter((f) => f.kind !== 'none' && (admin || !f.adminOnly));
}

/**
 * The schema `s` stands for: `$ref`s to `#/components/schemas/…` of `doc` followed.
 * @param {any} doc an OpenAPI document
 * @param {any} s
 * @returns {any} the schema, or null
 */
function resolve(doc, s) {
  for (let hops = 0; s && typeof s === 'object' && typeof s.$ref === 'string'; hops += 1) {
    const m = /^#\/components\/schemas\/([^/]+)$/.exec(s.$ref);
    // A reference elsewhere, or a loop: no schema rather than a hang.
    if (!m || hops > 16) return null;
    s = doc && doc.components && doc.components.schemas ? doc.components.schemas[m[1]] : null;
  }
  return s && typeof s === 'object' ? s : null;
}

/**
 * The JSON body schema of an operation of an OpenAPI document (`post`, `/v1/jobs`), or null.
 * @param {any} doc
 * @param {string} method
 * @param {string} path
 */
export function requestSchema(doc, method, path) {
  const op = doc && doc.paths && doc.paths[path] && doc.paths[path][method];
  const content = op && op.requestBody && op.requestBody.content;
  return resolve(doc, content && content['application/json'] && content['application/json'].schema);
}

/**
 * A property's schema without its "or null" (`anyOf: [s, {type: null}]`, `type: [t, 'null']`):
 * the API takes null as "left out", which an empty input says already.
 * @param {any} doc
 * @param {any} prop
 * @returns {any}
 */
function withoutNull(doc, prop) {
  let s = resolve(doc, prop);
  const alternatives = s && (s.anyOf || s.oneOf);
  if (Array.isArray(alternatives)) {
    const real = alternatives.map((a) => resolve(doc, a)).filter((a) => a && a.type !== 'null');
    s = real.length === 1 ? real[0] : null;
  }
  if (s && Array.isArray(s.type)) {
    const types = s.type.filter((/** @type {unknown} */ t) => t !== 'null');
    s = types.length === 1 ? { ...s, type: types[0] } : null;
  }
  return s;
}

/**
 * A field for body property `name` of schema `prop`, typed from it: an enum is a select (with
 * an empty choice: left out), a string a text input, an integer or number a number input
 * (with its bounds), a boolean a checkbox. Other shapes (lists, objects, unions) get none.
 * @param {string} name
 * @param {any} prop
 * @param {any} doc
 * @param {string} section
 * @returns {Field | null}
 */
export function schemaField(name, prop, doc, section) {
  const s = withoutNull(doc, prop);
  if (!s) return null;
  const note = typeof s.description === 'string' ? s.description : undefined;
  const base = { name, section, note };
  if (Array.isArray(s.enum) && s.enum.every((/** @type {unknown} */ v) => typeof v === 'string')) {
    const choices = [{ value: '', key: 'none' }, ...s.enum.map((/** @type {string} */ v) => ({ value: v, label: v }))];
    return { ...base, kind: 'select', choices, initial: typeof s.default === 'string' ? s.default : '', parse: textOrNothing };
  }
  /** @type {Record<string, string>} */
  const attrs = {};
  switch (s.type) {
    case 'string':
      if (Number.isInteger(s.maxLength)) attrs.maxlength = String(s.maxLength);
      return { ...base, kind: 'text', attrs, initial: typeof s.default === 'string' ? s.default : '', parse: textOrNothing };
    case 'integer':
    case 'number':
      if (typeof s.minimum === 'number') attrs.min = String(s.minimum);
      if (typeof s.maximum === 'number') attrs.max = String(s.maximum);
      attrs.step = s.type === 'integer' ? '1' : 'any';
      return { ...base, kind: 'number', attrs, initial: typeof s.default === 'number' ? String(s.default) : '', parse: numberOrNothing };
    case 'boolean':
      return { ...base, kind: 'checkbox', initial: s.default === true };
    default:
      return null;
  }
}

/**
 * Fields for the properties of body schema `schema` that `known` does not name, in the
 * schema's order, in section `section`: what a newer admin accepts that this console was not
 * written for.
 * @param {any} schema an object schema (`requestSchema`'s answer), or null
 * @param {Field[]} known
 * @param {any} [doc] the document the schema's `$ref`s point into
 * @param {string} [section]
 * @returns {Field[]}
 */
export function schemaFields(schema, known, doc = null, section = 'other') {
  if (!schema || typeof schema.properties !== 'object' || !schema.properties) return [];
  const names = new Set(known.map((f) => f.name));
  /** @type {Field[]} */
  const out = [];
  for (const [name, prop] of Object.entries(schema.properties)) {
    if (names.has(name)) continue;
    const f = schemaField(name, prop, doc, section);
    if (f) out.push(f);
  }
  return out;
}
