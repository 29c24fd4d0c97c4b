// @ts-check
// Business calendars (`/v1/calendars`) as the console edits and shows them: the form's field
// table, the dated exceptions typed a line each (`2025-10-01 National Day`) and read back, the
// weekly workdays in words, and why the schedule preview says a day is skipped.
//
// Nothing here touches the page: it is tested under Node.
import { bodyOf } from './fields.js';
import { t } from '../i18n.js';

/** @typedef {import('./fields.js').Field} Field */
/** @typedef {import('./fields.js').RawValue} RawValue */
/** @typedef {import('./fields.js').RawValues} RawValues */

/** The days of a week as the admin names them, in week order (Monday first, as ISO 8601). */
export const WEEKDAYS = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];

/**
 * One dated exception of a calendar: a holiday (excluded) or a make-up workday (included).
 * The admin leaves out an empty name in its answers.
 * @typedef {{date: string, name?: string}} CalendarDate
 */

/**
 * The dates of a date-lines field: `dates` in the order typed, `lines[i]` the line (from 1)
 * `dates[i]` came from (a range gives several dates of one line), and the first mistake, if
 * any, in words (`error`, '' when none) with its line.
 * @typedef {{dates: CalendarDate[], lines: number[], error: string, errorLine: number}} DateLines
 */

/** Most days one range line covers: a year (a longer one is a slip of the keyboard). */
const MAX_RANGE_DAYS = 366;
const DAY_MS = 86_400_000;

/**
 * Epoch ms (UTC midnight) of a `YYYY-MM-DD` date from 1970 to 9999, as the admin takes them,
 * or null: 2025-02-30 is no date, whatever `Date` would make of it.
 * @param {string} text
 */
function dayOf(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1970) return null;
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  return back.getUTCFullYear() === y && back.getUTCMonth() === mo - 1 && back.getUTCDate() === d ? ms : null;
}

/** `YYYY-MM-DD` of epoch ms (UTC). @param {number} ms */
const dateOf = (ms) => new Date(ms).toISOString().slice(0, 10);

/**
 * The words of `key` with each `{name}` in them filled in from `words`.
 * @param {string} key
 * @param {Record<string, string | number>} words
 */
export const say = (key, words) => Object.entries(words).reduce((s, [k, v]) => s.replaceAll(`{${k}}`, String(v)), t(key));

/**
 * The dates typed in a calendar's holidays or make-up workdays field, one a line:
 * `YYYY-MM-DD name` (the name is optional, and may also follow a comma or a tab, as pasted from
 * a spreadsheet), or a range `YYYY-MM-DD..YYYY-MM-DD name` for each day from one to the other.
 * Blank lines and lines starting with `#` say nothing. Parsing stops at the first mistake (a
 * date that is none, a range that runs backwards, a date given twice), named with its line.
 * @param {RawValue} text
 * @returns {DateLines}
 */
export function parseDateLines(text) {
  /** @type {CalendarDate[]} */
  const dates = [];
  /** @type {number[]} */
  const lines = [];
  /** The line each date was first given on. @type {Map<string, number>} */
  const seen = new Map();
  const all = (text === undefined ? '' : String(text)).split(/\r?\n/);
  for (let i = 0; i < all.length; i += 1) {
    const line = i + 1;
    const raw = all[i].trim();
    if (!raw || raw.startsWith('#')) continue;
    const m = /^([^\s,;]+)(?:[\s,;]+(.*))?$/.exec(raw);
    const token = m ? m[1] : raw;
    const name = m && m[2] ? m[2].trim() : '';
    const fail = (/** @type {string} */ key, /** @type {Record<string, string | number>} */ words) => ({ dates, lines, error: say(key, { line, ...words }), errorLine: line });
    const [fromText, toText] = token.includes('..') ? token.split('..', 2) : [token, token];
    const from = dayOf(fromText);
    const to = dayOf(toText);
    if (from === null) return fail('cal_line_bad_date', { text: fromText });
    if (to === null) return fail('cal_line_bad_date', { text: toText });
    if (to < from || (to - from) / DAY_MS >= MAX_RANGE_DAYS) return fail('cal_line_bad_range', { text: token, max: MAX_RANGE_DAYS });
    for (let ms = from; ms <= to; ms += DAY_MS) {
      const date = dateOf(ms);
      const first = seen.get(date);
      if (first !== undefined) return fail('cal_line_twice', { date, first });
      seen.set(date, line);
      dates.push(name ? { date, name } : { date });
      lines.push(line);
    }
  }
  return { dates, lines, error: '', errorLine: 0 };
}

/**
 * A calendar's dates as the field shows them: one a line, `YYYY-MM-DD name`, in the admin's
 * order (by date). `parseDateLines` reads them back as they were.
 * @param {CalendarDate[] | undefined} dates
 */
export const dateLinesText = (dates) => (dates || []).map((d) => (d.name ? `${d.date} ${d.name}` : d.date)).join('\n');

/**
 * The line of a date-lines field that an admin's complaint about one entry names
 * (`excluded[3].date`, `included[0].name`): where `parsed[list]` got that entry from.
 * @param {string | undefined} field
 * @param {Record<string, DateLines>} parsed the fields' dates as sent, by field name
 * @returns {{list: string, line: number} | null} null when the field names no entry sent
 */
export function entryLine(field, parsed) {
  const m = /^(excluded|included)\[(\d+)\]/.exec(String(field || ''));
  if (!m || !parsed[m[1]]) return null;
  const line = parsed[m[1]].lines[Number(m[2])];
  return line === undefined ? null : { list: m[1], line };
}

/**
 * A weekday's short name in the chosen language (`Mon`, `周一`); an unknown one as it is.
 * @param {string} code
 */
export function weekdayName(code) {
  const key = `wd_${code}`;
  return t(key) === key ? code : t(key);
}

/**
 * A calendar's weekly workdays in words: a run of three days or more as a range (`Mon–Fri`),
 * the others listed (`Mon–Thu, Sat`); none, a word that says so.
 * @param {string[] | undefined} workdays
 */
export function workdaysText(workdays) {
  const on = WEEKDAYS.map((d) => (workdays || []).includes(d));
  /** @type {string[]} */
  const parts = [];
  for (let i = 0; i < 7;) {
    if (!on[i]) { i += 1; continue; }
    let j = i;
    while (j + 1 < 7 && on[j + 1]) j += 1;
    if (j - i >= 2) parts.push(`${weekdayName(WEEKDAYS[i])}–${weekdayName(WEEKDAYS[j])}`);
    else for (let k = i; k <= j; k += 1) parts.push(weekdayName(WEEKDAYS[k]));
    i = j + 1;
  }
  return parts.length ? parts.join(', ') : t('cal_no_workdays');
}

/**
 * Why the schedule preview skips a fire, in the chosen language. The admin says it in English:
 * the holiday's name as the calendar gives it (shown as it is), `holiday` for one without a
 * name, or `SAT: not a workday`.
 * @param {string} why
 */
export function skipReason(why) {
  const m = /^([A-Z]{3}): not a workday$/.exec(why);
  if (m && WEEKDAYS.includes(m[1])) return say('cal_not_workday', { day: weekdayName(m[1]) });
  if (why === 'holiday') return t('cal_holiday');
  return why;
}

/**
 * The calendar name an imported file suggests: its name without `.ics`, each run of characters a
 * name may not hold (A-Z a-z 0-9 . _ -) made one `-`, at most 64 characters.
 * @param {string} fileName
 */
export function nameFromFile(fileName) {
  const base = fileName.replace(/^.*[\\/]/, '').replace(/\.(ics|ical|ifb|icalendar)$/i, '');
  return base.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '').slice(0, 64);
}

/** How many jobs and workflows use a calendar, in words. @param {{jobs?: number, workflows?: number}} c */
export const usedBy = (c) => (c.jobs || c.workflows ? say('cal_used_by', { jobs: c.jobs || 0, workflows: c.workflows || 0 }) : t('cal_unused'));

/**
 * The choices of a job's or workflow's calendar select: none first, then the admin's calendars
 * by name, with their zone. A calendar named by the object but not listed (the list could not
 * be read) stays on offer, so saving keeps it.
 * @param {Array<{name: string, time_zone?: string}>} calendars
 * @param {string} [current] the calendar the object names ('' none)
 * @returns {import('./fields.js').Choice[]}
 */
export function calendarChoices(calendars, current) {
  const listed = calendars.map((c) => ({ value: c.name, label: c.time_zone ? `${c.name} (${c.time_zone})` : c.name }));
  const kept = current && !calendars.some((c) => c.name === current) ? [{ value: current, label: current }] : [];
  return [{ value: '', key: 'calendar_none' }, ...listed, ...kept];
}

/** @param {RawValue} v */
const text = (v) => (v === undefined ? '' : String(v));

/**
 * The calendar form. The admin replaces a whole calendar on each save, so every field is sent;
 * a calendar's name never changes (shown, not sent, when editing).
 */
export const CALENDAR_FIELDS = /** @type {Field[]} */ ([
  { name: 'name', kind: 'text', label: 'cal_name', help: 'cal_name_help', onlyNew: true, attrs: { maxlength: '64', pattern: '[A-Za-z0-9._\\-]+', autocomplete: 'off', spellcheck: 'false', placeholder: 'CN' }, parse: (v) => text(v).trim() },
  { name: 'description', kind: 'text', label: 'cal_description', attrs: { maxlength: '500' } },
  // Required: the zone says which day a fire falls on.
  { name: 'time_zone', kind: 'text', attrs: { list: 'zone-names', autocomplete: 'off', spellcheck: 'false', placeholder: 'Asia/Shanghai, Europe/Berlin…', required: 'required' }, parse: (v) => text(v).trim() },
  { name: 'workdays', kind: 'checkboxes', label: 'workdays', choices: WEEKDAYS.map((d) => ({ value: d, key: `wd_${d}` })), initial: WEEKDAYS.slice(0, 5) },
  { name: 'excluded', kind: 'textarea', help: 'cal_excluded_help', attrs: { rows: '8', spellcheck: 'false', autocomplete: 'off', placeholder: '2025-10-01..2025-10-07 National Day' }, read: (c) => dateLinesText(c.excluded), parse: (v) => parseDateLines(v).dates },
  { name: 'included', kind: 'textarea', help: 'cal_included_help', attrs: { rows: '4', spellcheck: 'false', autocomplete: 'off', placeholder: '2025-10-11 make-up workday' }, read: (c) => dateLinesText(c.included), parse: (v) => parseDateLines(v).dates },
]);

/**
 * The body of the calendar form, and the first mistake of its date lines (the field and the
 * message naming the line), which keeps the form from being sent.
 * @param {RawValues} values the inputs' values by field name
 * @param {boolean} isNew the calendar is being created (its name is sent)
 * @returns {{body: Record<string, unknown>, parsed: Record<string, DateLines>, error: {field: string, message: string} | null}}
 */
export function calendarBody(values, isNew) {
  const parsed = { excluded: parseDateLines(values.excluded), included: parseDateLines(values.included) };
  const wrong = /** @type {Array<'excluded' | 'included'>} */ (['excluded', 'included']).find((f) => parsed[f].error);
  return {
    body: bodyOf(CALENDAR_FIELDS, values, { isNew }),
    parsed,
    error: wrong ? { field: wrong, message: parsed[wrong].error } : null,
  };
}
