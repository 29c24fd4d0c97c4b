// @ts-check
// Business calendars (`#calendars`): the list, read by every user (a job's form names one);
// and for administrators the calendar form built from `CALENDAR_FIELDS`, removal, and a
// calendar made from (or replaced by) an iCalendar file. Anyone may export one as a file.
import { h } from '../lib/dom.js';
import { api, apiText } from '../lib/api.js';
import { me } from '../lib/session.js';
import { fmtTime } from '../lib/time.js';
import { CALENDAR_FIELDS, calendarBody, dateLinesText, entryLine, nameFromFile, say, usedBy, workdaysText } from '../lib/calendars.js';
import { controls, valuesOf, errorBox, showError, clearErrors } from '../lib/forms.js';
import { t } from '../i18n.js';

/** An error to show next to form field `field`. @param {string} field @param {string} message */
const fieldError = (field, message) => Object.assign(new Error(message), { field });

/** The time zones the browser knows, offered in the zone inputs (typing any other is fine). */
function zoneList() {
  /** @type {string[]} */
  let zones = [];
  try { zones = Intl.supportedValuesOf('timeZone'); } catch { /* an older browser: no suggestions */ }
  if (!zones.includes('UTC')) zones = ['UTC', ...zones];
  return h('datalist', { id: 'zone-names' }, zones.map((z) => h('option', { value: z })));
}

/**
 * The calendar form: a new calendar (`cal` null) or an edit, which replaces the calendar
 * whole. `saved` is called once the admin took it.
 * @param {any} cal
 * @param {() => unknown} saved
 * @param {() => unknown} cancel
 */
function calendarForm(cal, saved, cancel) {
  const isNew = !cal;
  const ctl = controls(CALENDAR_FIELDS, cal, { isNew });
  const msg = h('div');
  const form = h('form', { class: 'card calendar-form', id: 'calendar-form', onsubmit: async (/** @type {Event} */ ev) => {
    ev.preventDefault();
    clearErrors(form); msg.replaceChildren();
    const { body, parsed, error } = calendarBody(valuesOf(ctl), isNew);
    // A mistake in the date lines is the user's to fix before anything is sent.
    if (error) { showError(form, msg, fieldError(error.field, error.message)); return; }
    try {
      if (isNew) await api('POST', '/v1/calendars', body); else await api('PUT', `/v1/calendars/${encodeURIComponent(cal.name)}`, body);
      saved();
    } catch (e) {
      // The admin names a date by its place in the list sent (`excluded[3].date`): the user
      // typed lines, so the complaint names the line.
      const at = entryLine(/** @type {any} */ (e).field, parsed);
      showError(form, msg, at ? fieldError(at.list, say('cal_line', { line: at.line, message: /** @type {Error} */ (e).message })) : e);
    }
  } },
  h('h3', {}, isNew ? t('new_calendar') : `${t('edit')} — ${cal.name}`),
  [...ctl.values()].map((c) => c.row),
  h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, t('save')), h('button', { type: 'button', onclick: cancel }, t('cancel'))), msg);
  return form;
}

/**
 * The import form: an `.ics` file makes the calendar of the name given (suggested from the
 * file's name), or replaces it after a confirmation; the zone, when given, overrides the file's.
 * @param {() => any[]} known the calendars listed now
 * @param {(note: string) => unknown} imported
 */
function importForm(known, imported) {
  const file = h('input', { type: 'file', name: 'ics', accept: '.ics,text/calendar', required: true });
  const name = h('input', { name: 'name', maxlength: '64', pattern: '[A-Za-z0-9._\\-]+', autocomplete: 'off', spellcheck: 'false', required: true });
  const zone = h('input', { name: 'time_zone', list: 'zone-names', autocomplete: 'off', spellcheck: 'false', placeholder: 'Asia/Shanghai' });
  const box = h('div');
  // The file's name suggests the calendar's, until the user types one of their own.
  let suggested = '';
  file.addEventListener('change', () => {
    const f = file.files && file.files[0];
    if (f && (!name.value || name.value === suggested)) { suggested = nameFromFile(f.name); name.value = suggested; }
  });
  const form = h('form', { id: 'calendar-import', class: 'inline-form card' },
    h('h3', {}, t('cal_import')),
    h('label', {}, t('cal_import_file'), ' ', file), ' ',
    h('label', {}, t('cal_name'), ' ', name), ' ',
    h('label', {}, t('cal_import_zone'), ' ', zone), ' ',
    h('button', { type: 'submit' }, t('cal_import')),
    h('small', { class: 'help' }, t('cal_import_help')), box);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form); box.replaceChildren();
    const f = file.files && file.files[0];
    if (!f) { showError(form, box, fieldError('ics', t('cal_choose_file'))); return; }
    const n = name.value.trim();
    if (known().some((c) => c.name === n) && !confirm(say('cal_confirm_replace', { name: n }))) return;
    const q = zone.value.trim() ? `?${new URLSearchParams({ time_zone: zone.value.trim() })}` : '';
    try {
      const cal = await apiText('PUT', `/v1/calendars/${encodeURIComponent(n)}/ics${q}`, await f.text(), 'text/calendar');
      form.reset(); suggested = '';
      imported(say('cal_imported', { name: cal.name, excluded: cal.excluded.length, included: cal.included.length }));
    } catch (e) {
      showError(form, box, e);
    }
  });
  return form;
}

/** @param {HTMLElement} root */
export async function calendars(root) {
  const admin = me().admin;
  /** @type {any[]} */
  let list = await api('GET', '/v1/calendars');
  const slot = h('div');
  const msg = h('div', { id: 'calendars-msg', role: 'status' });
  const table = h('div');
  const draw = async () => {
    try { list = await api('GET', '/v1/calendars'); } catch (e) { msg.replaceChildren(errorBox(e)); return; }
    table.replaceChildren(listOf(list));
  };
  const saved = () => { slot.replaceChildren(); msg.replaceChildren(); draw(); };
  const close = () => slot.replaceChildren();
  /** @param {any} c */
  const row = (c) => h('tr', { 'data-calendar': c.name },
    h('td', { class: 'name' }, c.name),
    h('td', { class: 'desc' }, c.description),
    h('td', { class: 'zone' }, c.time_zone),
    h('td', { class: 'workdays' }, workdaysText(c.workdays)),
    // The dates themselves in the tooltip: the counts alone do not say which.
    h('td', { class: 'excluded', title: dateLinesText(c.excluded) }, c.excluded.length),
    h('td', { class: 'included', title: dateLinesText(c.included) }, c.included.length),
    h('td', { class: 'used' }, usedBy(c)),
    h('td', { class: 'updated' }, c.updated_at ? `${fmtTime(c.updated_at)} · ${c.updated_by}` : ''),
    h('td', { class: 'row-actions' },
      // A plain link: reading is authorised by the session's cookie (only changes need the
      // CSRF header), and the browser saves the file as it saves any download.
      h('a', { class: 'export', href: `/v1/calendars/${encodeURIComponent(c.name)}/ics`, download: `${c.name}.ics` }, t('cal_export')),
      admin ? [' ',
        h('button', { type: 'button', class: 'edit', onclick: () => { msg.replaceChildren(); slot.replaceChildren(calendarForm(c, saved, close)); } }, t('edit')),
        h('button', { type: 'button', class: 'remove', onclick: async () => {
          if (!confirm(t('confirm_delete'))) return;
          // 409 while a job or workflow names the calendar: the admin's reason is shown.
          try { await api('DELETE', `/v1/calendars/${encodeURIComponent(c.name)}`); msg.replaceChildren(); await draw(); } catch (e) { msg.replaceChildren(errorBox(e)); }
        } }, t('remove'))] : ''));
  /** @param {any[]} all */
  const listOf = (all) => (all.length
    ? h('table', { id: 'calendars' },
      h('thead', {}, h('tr', {}, [t('cal_name'), t('cal_description'), t('time_zone'), t('workdays'), t('cal_col_excluded'), t('cal_col_included'), t('cal_col_used'), t('cal_updated'), ''].map((x) => h('th', {}, x)))),
      h('tbody', {}, all.map(row)))
    : h('p', { class: 'note', id: 'no-calendars' }, t('no_calendars')));
  table.replaceChildren(listOf(list));
  root.replaceChildren(h('h2', {}, t('calendars')),
    h('p', { class: 'note' }, t('calendars_intro')),
    admin
      ? h('div', { class: 'filters' }, h('button', { id: 'add-calendar', type: 'button', onclick: () => { msg.replaceChildren(); slot.replaceChildren(calendarForm(null, saved, close)); } }, t('new_calendar')))
      : h('p', { class: 'note' }, t('calendars_admin_only')),
    slot, msg, table,
    admin ? importForm(() => list, (note) => { msg.replaceChildren(h('p', { class: 'ok' }, note)); draw(); }) : '',
    zoneList());
}
