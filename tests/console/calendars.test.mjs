// @ts-check
// Business calendars without a page (web/lib/calendars.js): the holiday and make-up workday
// lines as typed (good lines, each mistake named by its line), read back as they were, the
// admin's complaint about an entry traced to its line, the body the form sends, the workdays
// and the preview's reasons in words, in English and Chinese.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  WEEKDAYS, CALENDAR_FIELDS, parseDateLines, dateLinesText, entryLine, calendarBody, calendarChoices,
  workdaysText, skipReason, nameFromFile, usedBy,
} from '../../web/lib/calendars.js';
import { initialValue } from '../../web/lib/fields.js';
import { setLang } from '../../web/i18n.js';

setLang('en');

test('good lines: a date and its name, one a line; blank lines and comments say nothing', () => {
  const typed = [
    '# China, National Day',
    '2025-10-01 National Day',
    '',
    '  2025-10-02\tNational Day  ',
    '2025-10-03,National Day',
    '2025-10-06',
    '2025-10-08 Mid-Autumn Festival (中秋节)',
  ].join('\n');
  const p = parseDateLines(typed);
  assert.equal(p.error, '');
  assert.deepEqual(p.dates, [
    { date: '2025-10-01', name: 'National Day' },
    { date: '2025-10-02', name: 'National Day' },
    { date: '2025-10-03', name: 'National Day' },
    { date: '2025-10-06' },
    { date: '2025-10-08', name: 'Mid-Autumn Festival (中秋节)' },
  ]);
  assert.deepEqual(p.lines, [2, 4, 5, 6, 7], 'each date knows its line');
  assert.deepEqual(parseDateLines('').dates, []);
  assert.deepEqual(parseDateLines(undefined).dates, []);
  assert.deepEqual(parseDateLines('2025-10-01 a\r\n2025-10-02 b\r\n').dates.map((d) => d.name), ['a', 'b'], 'Windows line ends');
});

test('a range gives each of its days, all of one line', () => {
  const p = parseDateLines('2025-12-31 New Year\'s Eve\n2025-10-01..2025-10-03 National Day\n2024-02-28..2024-03-01');
  assert.equal(p.error, '');
  assert.deepEqual(p.dates.map((d) => d.date), ['2025-12-31', '2025-10-01', '2025-10-02', '2025-10-03', '2024-02-28', '2024-02-29', '2024-03-01'], 'in the order typed; a leap day counted');
  assert.deepEqual(p.lines, [1, 2, 2, 2, 3, 3, 3]);
  assert.deepEqual(p.dates[2], { date: '2025-10-02', name: 'National Day' });
  assert.deepEqual(parseDateLines('2025-10-05..2025-10-05 one day').dates, [{ date: '2025-10-05', name: 'one day' }]);
});

test('a date that is none is an error naming its line, and what was typed', () => {
  const p = parseDateLines('2025-10-01 National Day\n\n2025-13-01 Thirteenth month\n2025-10-03 National Day');
  assert.equal(p.error, 'line 3: "2025-13-01" is not a date (YYYY-MM-DD)');
  assert.equal(p.errorLine, 3);
  for (const [typed, bad] of [['2025-02-29', '2025-02-29'], ['2025-04-31 x', '2025-04-31'], ['2025-1-5 x', '2025-1-5'], ['1969-12-31', '1969-12-31'],
    ['National Day 2025-10-01', 'National'], ['2025/10/01', '2025/10/01'], ['2025-10-01..2025-10-32 x', '2025-10-32']]) {
    const q = parseDateLines(`2025-10-01\n${typed}`);
    assert.equal(q.error, `line 2: "${bad}" is not a date (YYYY-MM-DD)`, typed);
    assert.equal(q.errorLine, 2, typed);
  }
});

test('a date given twice, or a range backwards or over a year, is an error naming its line', () => {
  assert.equal(parseDateLines('2025-10-01 a\n2025-10-02 b\n2025-10-01 c').error, 'line 3: 2025-10-01 is given twice (first on line 1)');
  assert.equal(parseDateLines('2025-09-30..2025-10-02 a\n2025-10-02 b').error, 'line 2: 2025-10-02 is given twice (first on line 1)', 'inside a range');
  assert.equal(parseDateLines('2025-10-03..2025-10-01 x').error, 'line 1: 2025-10-03..2025-10-01 is no range of at most 366 days, first day first');
  assert.equal(parseDateLines('x\n2025-01-01..2026-01-02').errorLine, 1, 'the first mistake');
  assert.equal(parseDateLines('2025-01-01\n2025-01-01..2026-01-02').error, 'line 2: 2025-01-01..2026-01-02 is no range of at most 366 days, first day first');
  assert.equal(parseDateLines('2024-01-01..2024-12-31 leap year').dates.length, 366, 'a whole leap year is fine');
});

test('in Chinese, the line is named too', () => {
  setLang('zh');
  try {
    assert.equal(parseDateLines('2025-10-01 国庆节\n2025-10-32 国庆节').error, '第 2 行：“2025-10-32” 不是日期（YYYY-MM-DD）');
  } finally {
    setLang('en');
  }
});

test('dates are shown one a line, and read back as they were', () => {
  const dates = [{ date: '2025-10-01', name: 'National Day' }, { date: '2025-10-11' }, { date: '2025-10-12', name: '' }];
  const text = dateLinesText(dates);
  assert.equal(text, '2025-10-01 National Day\n2025-10-11\n2025-10-12');
  assert.deepEqual(parseDateLines(text).dates, [dates[0], dates[1], { date: '2025-10-12' }]);
  assert.equal(dateLinesText(undefined), '');
});

test("the admin's complaint about an entry names the line the entry was typed on", () => {
  const parsed = { excluded: parseDateLines('# holidays\n2025-10-01..2025-10-03 National Day\n2025-10-06 x'), included: parseDateLines('2025-10-11') };
  assert.deepEqual(entryLine('excluded[3].date', parsed), { list: 'excluded', line: 3 });
  assert.deepEqual(entryLine('excluded[1].name', parsed), { list: 'excluded', line: 2 }, 'a day of a range: the range\'s line');
  assert.deepEqual(entryLine('included[0].date', parsed), { list: 'included', line: 1 });
  for (const other of ['excluded[9].date', 'included', 'time_zone', 'workdays[1]', undefined]) assert.equal(entryLine(other, parsed), null, String(other));
});

test('the form: Monday to Friday for a new calendar; the body, with the name only when creating', () => {
  const workdays = /** @type {import('../../web/lib/fields.js').Field} */ (CALENDAR_FIELDS.find((f) => f.name === 'workdays'));
  assert.deepEqual(initialValue(workdays, null), ['MON', 'TUE', 'WED', 'THU', 'FRI']);
  assert.deepEqual(workdays.choices?.map((c) => c.value), WEEKDAYS);
  const stored = { name: 'CN', description: 'China', time_zone: 'Asia/Shanghai', workdays: ['MON'], excluded: [{ date: '2025-10-01', name: 'National Day' }], included: [{ date: '2025-10-11' }] };
  const read = Object.fromEntries(CALENDAR_FIELDS.map((f) => [f.name, initialValue(f, stored)]));
  assert.deepEqual(read, { name: 'CN', description: 'China', time_zone: 'Asia/Shanghai', workdays: ['MON'], excluded: '2025-10-01 National Day', included: '2025-10-11' });
  const values = { name: ' CN ', description: 'China', time_zone: ' Asia/Shanghai ', workdays: ['MON', 'TUE', 'WED', 'THU', 'FRI'],
    excluded: '2025-10-01..2025-10-03 National Day', included: '2025-10-11 make-up workday' };
  const made = calendarBody(values, true);
  assert.equal(made.error, null);
  assert.deepEqual(made.body, {
    name: 'CN', description: 'China', time_zone: 'Asia/Shanghai', workdays: ['MON', 'TUE', 'WED', 'THU', 'FRI'],
    excluded: ['2025-10-01', '2025-10-02', '2025-10-03'].map((date) => ({ date, name: 'National Day' })),
    included: [{ date: '2025-10-11', name: 'make-up workday' }],
  });
  assert.ok(!('name' in calendarBody(values, false).body), 'an edit never renames');
  assert.deepEqual(calendarBody({ ...values, workdays: [], excluded: '', included: '' }, true).body.excluded, [], 'emptied lists are sent: a save replaces the calendar');
});

test('a mistake in the date lines names the field and the line, and is found before anything is sent', () => {
  const values = { name: 'CN', time_zone: 'Asia/Shanghai', workdays: ['MON'], excluded: '2025-10-01', included: '2025-10-11\nsoon' };
  assert.deepEqual(calendarBody(values, true).error, { field: 'included', message: 'line 2: "soon" is not a date (YYYY-MM-DD)' });
  assert.equal(calendarBody({ ...values, excluded: '2025-02-30' }, true).error?.field, 'excluded', 'the holidays first');
});

test('workdays in words: a run of three days or more as a range', () => {
  assert.equal(workdaysText(['MON', 'TUE', 'WED', 'THU', 'FRI']), 'Mon–Fri');
  assert.equal(workdaysText(['SUN', 'MON', 'TUE', 'WED', 'THU', 'SAT']), 'Mon–Thu, Sat, Sun', 'in week order');
  assert.equal(workdaysText(['MON', 'WED', 'FRI']), 'Mon, Wed, Fri');
  assert.equal(workdaysText(WEEKDAYS), 'Mon–Sun');
  assert.equal(workdaysText([]), '(no workday)');
  setLang('zh');
  try {
    assert.equal(workdaysText(['MON', 'TUE', 'WED', 'THU', 'FRI', 'SUN']), '周一–周五, 周日');
  } finally {
    setLang('en');
  }
});

test("why the preview skips a fire: the admin's words, in the chosen language", () => {
  assert.equal(skipReason('SAT: not a workday'), 'Sat: not a workday');
  assert.equal(skipReason('National Day'), 'National Day', 'a holiday is named as the calendar names it');
  assert.equal(skipReason('holiday'), 'holiday');
  setLang('zh');
  try {
    assert.equal(skipReason('SUN: not a workday'), '周日：非工作日');
    assert.equal(skipReason('holiday'), '节假日');
    assert.equal(skipReason('国庆节'), '国庆节');
    assert.equal(skipReason('XYZ: not a workday'), 'XYZ: not a workday', 'an unknown day as it is');
  } finally {
    setLang('en');
  }
});

test('an imported file suggests a calendar name the admin takes', () => {
  assert.equal(nameFromFile('CN.ics'), 'CN');
  assert.equal(nameFromFile('China holidays 2025 (official).ics'), 'China-holidays-2025-official');
  assert.equal(nameFromFile('C:\\Users\\me\\节假日 cn.ICS'), 'cn');
  assert.equal(nameFromFile(`${'x'.repeat(80)}.ics`).length, 64);
});

test("the job form's calendar choices, and who uses a calendar", () => {
  assert.deepEqual(calendarChoices([{ name: 'CN', time_zone: 'Asia/Shanghai' }]), [{ value: '', key: 'calendar_none' }, { value: 'CN', label: 'CN (Asia/Shanghai)' }]);
  assert.deepEqual(calendarChoices([], 'CN').map((c) => c.value), ['', 'CN'], 'the one named stays on offer');
  assert.deepEqual(calendarChoices([{ name: 'CN' }], 'CN').map((c) => c.value), ['', 'CN'], 'once');
  assert.equal(usedBy({ jobs: 2, workflows: 1 }), '2 jobs, 1 workflows');
  assert.equal(usedBy({ jobs: 0, workflows: 0 }), 'unused');
});
