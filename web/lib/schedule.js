// @ts-check
// Schedules as the job and workflow forms and lists show them.
import { h } from './dom.js';
import { api } from './api.js';
import { fmtTime } from './time.js';
import { asApiError, errorBox, optName } from './forms.js';
import { moreSchedules } from './fields.js';
import { t } from '../i18n.js';

/**
 * The schedule of a job or workflow as the lists show it: the translated type and the expression.
 * @param {{schedule_type: string, schedule_expr: string}} j
 */
export const scheduleText = (j) => (j.schedule_type === 'NONE' ? optName('sched', 'NONE') : `${optName('sched', j.schedule_type)} ${j.schedule_expr}`);

/**
 * Shows in `out` the next five fire times of the schedule typed in a form, asked of the admin
 * a moment after each edit, and marks the field at fault when it refuses the schedule. Given the
 * job's parameter field, a parameter with date placeholders is shown as each fire would send it.
 * @param {HTMLSelectElement} typeSel
 * @param {HTMLInputElement} exprIn
 * @param {HTMLInputElement} tzIn
 * @param {HTMLElement} out
 * @param {HTMLInputElement | HTMLTextAreaElement} [paramIn]
 * @param {HTMLTextAreaElement} [moreIn] a job's further schedules (their times are merged in)
 */
export function previewer(typeSel, exprIn, tzIn, out, paramIn, moreIn) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let asked = 0;
  const update = () => {
    clearTimeout(timer);
    // A finding is about the schedule as it is now: clear the old one at once, so a fixed
    // zone or expression never leaves an error behind that blocks saving.
    for (const el of [exprIn, tzIn, paramIn, moreIn]) el?.setCustomValidity('');
    const seq = ++asked;
    timer = setTimeout(async () => {
      if (typeSel.value === 'NONE') { out.replaceChildren(); return; }
      // The zone applies to CRON only (its field is hidden otherwise).
      const q = new URLSearchParams({ type: typeSel.value, expr: exprIn.value, tz: typeSel.value === 'CRON' ? tzIn.value : '', count: '5' });
      // Only a parameter with placeholders: any other is sent as written.
      const dated = !!paramIn && paramIn.value.includes('${');
      if (dated && paramIn) q.set('param', paramIn.value);
      const more = moreIn && (typeSel.value === 'CRON' || typeSel.value === 'FIX_RATE') ? moreSchedules(moreIn.value) : [];
      if (more.length) q.set('more', JSON.stringify(more));
      try {
        const p = await api('GET', `/v1/schedule/preview?${q}`);
        if (seq !== asked) return;
        // The console's one date format, in the zone chosen in the top bar (the job's by default).
        out.replaceChildren(h('div', { class: 'ok' }, `${t('next_fires')} (${p.time_zone})`),
          h('ol', { id: 'preview' }, p.next.map((/** @type {any} */ n) => h('li', { 'data-local': n.local }, fmtTime(n.at, p.time_zone), n.dst_shift ? h('span', { class: 'dst' }, ` ⚠ ${t('dst')} (UTC${n.utc_offset_secs >= 0 ? '+' : '-'}${Math.abs(n.utc_offset_secs / 3600)})`) : '',
            dated ? h('span', { class: 'param' }, ` → ${n.param}`) : ''))));
      } catch (thrown) {
        if (seq !== asked) return;
        const e = asApiError(thrown);
        // Mark the field at fault (the zone, the parameter or the expression), never a hidden one.
        const at = e.field === 'time_zone' ? tzIn : e.field === 'param' && paramIn ? paramIn : e.field?.startsWith('more_schedules') && moreIn ? moreIn : exprIn;
        const label = at.closest('label');
        if (label && !label.hidden) at.setCustomValidity(e.message);
        out.replaceChildren(errorBox(e));
      }
    }, 250);
  };
  for (const el of [typeSel, exprIn, tzIn, paramIn, moreIn]) el?.addEventListener('input', update);
  update();
}
