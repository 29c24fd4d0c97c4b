// @ts-check
// Schedules as the job and workflow forms and lists show them.
import { h } from './dom.js';
import { api } from './api.js';
import { fmtTime } from './time.js';
import { asApiError, errorBox, optName } from './forms.js';
import { moreSchedules } from './fields.js';
import { skipReason } from './calendars.js';
import { t } from '../i18n.js';

/**
 * The schedule of a job or workflow as the lists show it: the translated type and the expression.
 * @param {{schedule_type: string, schedule_expr: string}} j
 */
export const scheduleText = (j) => (j.schedule_type === 'NONE' ? optName('sched', 'NONE') : `${optName('sched', j.schedule_type)} ${j.schedule_expr}`);

/**
 * The business calendar a job or workflow keeps to, as the lists show it after its schedule:
 * a link to the calendars, or nothing when it names none (the cell's text stays the schedule's).
 * @param {{calendar?: string}} j
 * @returns {import('./dom.js').Child}
 */
export const calendarTag = (j) => (j.calendar
  ? [' ', h('a', { href: '#calendars', class: 'calendar-tag', 'data-calendar': j.calendar, title: t('calendar') }, `📅 ${j.calendar}`)]
  : '');

/**
 * The inputs of a form the preview reads besides the schedule's type, expression and zone.
 * @typedef {object} PreviewInputs
 * @property {HTMLInputElement | HTMLTextAreaElement} [param] a job's parameter: one with date
 *   placeholders is shown as each fire would send it
 * @property {HTMLTextAreaElement} [more] a job's further schedules (their times are merged in)
 * @property {HTMLSelectElement} [calendar] the business calendar: the fires it skips are listed
 */

/**
 * Shows in `out` the next five fire times of the schedule typed in a form, asked of the admin
 * a moment after each edit, and marks the field at fault when it refuses the schedule. With a
 * business calendar chosen, the fires it skips until then are listed too, each with why.
 * @param {HTMLSelectElement} typeSel
 * @param {HTMLInputElement} exprIn
 * @param {HTMLInputElement} tzIn
 * @param {HTMLElement} out
 * @param {PreviewInputs} [more]
 */
export function previewer(typeSel, exprIn, tzIn, out, { param: paramIn, more: moreIn, calendar: calendarIn } = {}) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let asked = 0;
  const update = () => {
    clearTimeout(timer);
    // A finding is about the schedule as it is now: clear the old one at once, so a fixed
    // zone or expression never leaves an error behind that blocks saving.
    for (const el of [exprIn, tzIn, paramIn, moreIn, calendarIn]) el?.setCustomValidity('');
    const seq = ++asked;
    timer = setTimeout(async () => {
      if (typeSel.value === 'NONE') { out.replaceChildren(); return; }
      // The zone applies to CRON only (its field is hidden otherwise).
      const q = new URLSearchParams({ type: typeSel.value, expr: exprIn.value, tz: typeSel.value === 'CRON' ? tzIn.value : '', count: '5' });
      // Only a parameter with placeholders: any other is sent as written.
      const dated = !!paramIn && paramIn.value.includes('${');
      if (dated && paramIn) q.set('param', paramIn.value);
      const grid = typeSel.value === 'CRON' || typeSel.value === 'FIX_RATE';
      const more = moreIn && grid ? moreSchedules(moreIn.value) : [];
      if (more.length) q.set('more', JSON.stringify(more));
      // As saving does: a calendar keeps only a grid (the field is hidden otherwise).
      if (calendarIn && grid && calendarIn.value) q.set('calendar', calendarIn.value);
      try {
        const p = await api('GET', `/v1/schedule/preview?${q}`);
        if (seq !== asked) return;
        /** @type {Array<{at: number, local: string, why: string}>} */
        const skipped = p.skipped || [];
        // The console's one date format, in the zone chosen in the top bar (the job's by default).
        out.replaceChildren(h('div', { class: 'ok' }, `${t('next_fires')} (${p.time_zone})`),
          h('ol', { id: 'preview' }, p.next.map((/** @type {any} */ n) => h('li', { 'data-local': n.local }, fmtTime(n.at, p.time_zone), n.dst_shift ? h('span', { class: 'dst' }, ` ⚠ ${t('dst')} (UTC${n.utc_offset_secs >= 0 ? '+' : '-'}${Math.abs(n.utc_offset_secs / 3600)})`) : '',
            dated ? h('span', { class: 'param' }, ` → ${n.param}`) : ''))),
          ...(skipped.length ? [h('div', { class: 'note skipped-head' }, t('skipped_days')),
            h('ul', { id: 'preview-skipped' }, skipped.map((s) => h('li', { 'data-local': s.local, 'data-why': s.why },
              fmtTime(s.at, p.time_zone), ' — ', h('span', { class: 'why' }, skipReason(s.why)))))] : []));
      } catch (thrown) {
        if (seq !== asked) return;
        const e = asApiError(thrown);
        // Mark the field at fault (the zone, the parameter, the calendar or the expression), never a hidden one.
        const at = e.field === 'time_zone' ? tzIn : e.field === 'param' && paramIn ? paramIn : e.field?.startsWith('more_schedules') && moreIn ? moreIn
          : e.field === 'calendar' && calendarIn ? calendarIn : exprIn;
        const label = at.closest('label');
        if (label && !label.hidden) at.setCustomValidity(e.message);
        out.replaceChildren(errorBox(e));
      }
    }, 250);
  };
  for (const el of [typeSel, exprIn, tzIn, paramIn, moreIn, calendarIn]) el?.addEventListener('input', update);
  update();
}
