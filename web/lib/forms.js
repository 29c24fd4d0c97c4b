// @ts-check
// Forms: labelled inputs, the selects of the admin's enums, the API's complaints next to the
// field they name, and the inputs of a field table (`fields.js`) built and read back.
import { h } from './dom.js';
import { t } from '../i18n.js';
import { initialValue, bodyOf } from './fields.js';
import { GROUP_ROLES } from './session.js';

/** @typedef {import('./fields.js').Field} Field */
/** @typedef {import('./fields.js').Choice} Choice */
/** @typedef {import('./fields.js').RawValue} RawValue */
/** @typedef {import('./fields.js').RawValues} RawValues */
/** @typedef {import('./api.js').ApiError} ApiError */

/**
 * An input with its label (translation key `label`) and an optional line under it.
 * @param {string} label
 * @param {Node} input
 * @param {Node | string} [help]
 */
export const field = (label, input, help) => h('label', {}, h('span', {}, t(label)), input, help || '');

/**
 * A select of `[value, label]` pairs with `value` chosen.
 * @param {string} name
 * @param {Array<[string | number, string]>} choices
 * @param {unknown} value
 */
export const sel = (name, choices, value) => h('select', { name }, choices.map(([v, l]) => h('option', { value: v, selected: String(v) === String(value) ? true : null }, l)));

/**
 * A number input's value, or undefined when empty.
 * @param {string | undefined} v
 */
export const num = (v) => (v === '' || v === undefined ? undefined : Number(v));

/**
 * A form's section: a fieldset with the translated legend `sec_<key>`.
 * @param {string} key
 * @param {...import('./dom.js').Child} rows
 */
export const section = (key, ...rows) => h('fieldset', { class: 'sec', 'data-section': key }, h('legend', {}, t(`sec_${key}`)), rows);

/**
 * The form label of an API field (`schedule_expr` → "Schedule expression"), else the name.
 * @param {unknown} name
 */
export function fieldLabel(name) {
  const base = String(name).split(/[.[]/)[0];
  return t(base) === base ? String(name) : t(base);
}

/**
 * What was thrown, as an API error: an API failure as it is, anything else (a network error,
 * a bug) as its message.
 * @param {unknown} e
 * @returns {ApiError}
 */
export const asApiError = (e) => (e instanceof Error ? e : new Error(String(e)));

/**
 * An API error as a line of the page, naming its field by label.
 * @param {unknown} thrown
 */
export function errorBox(thrown) {
  const e = asApiError(thrown);
  return h('p', { class: 'err', role: 'alert' }, e.field ? `${fieldLabel(e.field)}: ${e.message}` : e.message);
}

/**
 * Removes the field errors shown in `form` (of the field `name` only, when given).
 * @param {HTMLElement} form
 * @param {string} [name]
 */
export function clearErrors(form, name) {
  for (const el of form.querySelectorAll('.field-err')) if (!name || /** @type {HTMLElement} */ (el).dataset.field === name) el.remove();
  for (const el of form.querySelectorAll('[aria-invalid]')) if (!name || el.getAttribute('name') === name) el.removeAttribute('aria-invalid');
}

/**
 * Shows an API error next to the form field it names (`time_zone`, `child_job_ids[0]`…), or in
 * `box` when the form has no such visible field. Earlier errors go first; each error goes as
 * soon as its field is edited, so a fixed field never keeps an old complaint.
 * @param {HTMLFormElement} form
 * @param {HTMLElement} box
 * @param {unknown} thrown
 */
export function showError(form, box, thrown) {
  const e = asApiError(thrown);
  clearErrors(form);
  box.replaceChildren();
  const name = e.field ? String(e.field).split(/[.[]/)[0] : '';
  const input = name ? /** @type {HTMLInputElement[]} */ ([...form.elements]).find((el) => el.name === name) : null;
  const label = input && input.closest('label');
  if (!input || !label || label.closest('[hidden]')) { box.replaceChildren(errorBox(e)); return; }
  input.setAttribute('aria-invalid', 'true');
  label.append(h('span', { class: 'field-err err', role: 'alert', 'data-field': name }, e.message));
  input.addEventListener('input', () => clearErrors(form, name), { once: true });
  input.focus();
}

/**
 * The translated name of an enum value, else the admin's English title, else the value.
 * @param {string} prefix
 * @param {string} value
 * @param {string} [title]
 */
export function optName(prefix, value, title) { const k = `${prefix}_${value}`; return t(k) === k ? (title || value) : t(k); }

/**
 * The line explaining an enum value, or ''.
 * @param {string} prefix
 * @param {string} value
 */
function optHelp(prefix, value) { const k = `${prefix}_${value}_help`; return t(k) === k ? '' : t(k); }

/**
 * A select of one job enum built from the admin's values (`/v1/options`), with translated names
 * (`prefix_VALUE`) and a line explaining the chosen value (`prefix_VALUE_help`). A value the
 * admin does not list (it cannot happen today) is kept rather than silently replaced.
 * @param {string} name
 * @param {Array<{value: string, title?: string}>} choices
 * @param {string} prefix
 * @param {string} [value]
 */
export function optSelect(name, choices, prefix, value) {
  const list = [...choices];
  if (value && !list.some((c) => c.value === value)) list.push({ value, title: value });
  const s = h('select', { name, 'aria-describedby': `help-${name}` },
    list.map((c) => h('option', { value: c.value, selected: c.value === value ? true : null, title: optHelp(prefix, c.value) }, optName(prefix, c.value, c.title))));
  const help = h('small', { class: 'help', id: `help-${name}` });
  const explain = () => { help.textContent = optHelp(prefix, s.value); };
  s.addEventListener('change', explain);
  explain();
  return { select: s, help };
}

/**
 * An input of a form built from a field table: the element the value is read from, the
 * labelled row the form shows, and its value.
 * @typedef {object} Control
 * @property {Field} field
 * @property {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement | HTMLFieldSetElement} input
 * @property {HTMLElement} row
 * @property {() => RawValue} value
 */

/**
 * Where the choices of a table's selects come from: `options` the admin's enum lists
 * (`/v1/options`), `choices` the lists a page makes (its groups, its jobs), by name.
 * @typedef {object} Sources
 * @property {Record<string, Array<{value: string, title?: string}>>} [options]
 * @property {Record<string, Choice[]>} [choices]
 * @property {boolean} [isNew] the form creates an object (`onlyNew` fields can be entered)
 */

/** @param {Choice} c */
const choiceLabel = (c) => (c.label !== undefined ? c.label : c.key !== undefined ? t(c.key) : c.value);

/**
 * The choices of a select field: its own, or the page's list it names.
 * @param {Field} f
 * @param {Sources} src
 * @returns {Choice[]}
 */
function choicesOf(f, src) {
  if (f.choices) return f.choices;
  const list = f.options && src.choices ? src.choices[f.options] : undefined;
  if (!list) throw new Error(`no choices for ${f.name}`);
  return list;
}

/**
 * The input of one field, filled with `value`.
 * @param {Field} f
 * @param {RawValue} value
 * @param {Sources} src
 * @returns {{input: Control['input'], help: Node | null, value: () => RawValue}}
 */
function makeInput(f, value, src) {
  const name = f.input || f.name;
  const attrs = { name, ...(f.attrs || {}), placeholder: f.hint ? t(f.hint) : (f.attrs || {}).placeholder, title: f.tip ? t(f.tip) : null, disabled: f.onlyNew && !src.isNew ? true : null };
  const help = f.help ? h('small', { class: 'help' }, t(f.help)) : f.note ? h('small', { class: 'help' }, f.note) : null;
  const chosen = Array.isArray(value) ? value : [];
  switch (f.kind) {
    case 'checkbox': {
      const input = h('input', { ...attrs, type: 'checkbox', checked: !!value });
      return { input, help, value: () => input.checked };
    }
    case 'multiselect': {
      const input = h('select', { ...attrs, multiple: true },
        choicesOf(f, src).map((c) => h('option', { value: c.value, selected: chosen.includes(c.value) ? true : null }, choiceLabel(c))));
      return { input, help, value: () => [...input.selectedOptions].map((o) => o.value) };
    }
    case 'checkboxes': {
      const boxes = choicesOf(f, src).map((c) => h('input', { type: 'checkbox', name, value: c.value, checked: chosen.includes(c.value) }));
      const input = h('fieldset', {}, h('legend', {}, t(f.label || f.name)),
        boxes.map((b, i) => h('label', {}, b, ` ${choiceLabel(choicesOf(f, src)[i])}`)));
      return { input, help, value: () => boxes.filter((b) => b.checked).map((b) => b.value) };
    }
    case 'roles': {
      // One select per choice (group): no role, or one of the roles, the held one chosen.
      const held = new Map(chosen.map((x) => /** @type {[string, string]} */ (x.split(':'))));
      const roleChoices = /** @type {Array<[string, string]>} */ ([['', t('grole_none')], ...GROUP_ROLES.map((r) => [r, t(`grole_${r}`)])]);
      const rows = choicesOf(f, src).map((c) => ({ choice: c, select: /** @type {HTMLSelectElement} */ (sel(name, roleChoices, held.get(c.value) || '')) }));
      const input = h('fieldset', {}, h('legend', {}, t(f.label || f.name)),
        rows.map((r) => h('label', { class: 'role-in' }, h('span', {}, choiceLabel(r.choice)), r.select)), help || '');
      return { input, help: null, value: () => rows.filter((r) => r.select.value).map((r) => `${r.choice.value}:${r.select.value}`) };
    }
    case 'select': {
      const text = typeof value === 'string' ? value : '';
      if (f.prefix && f.options) {
        // One of the admin's enums: its values, translated, with the line explaining the one chosen.
        const o = optSelect(name, (src.options || {})[f.options] || [], f.prefix, text);
        return { input: o.select, help: o.help, value: () => o.select.value };
      }
      const input = sel(name, choicesOf(f, src).map((c) => [c.value, choiceLabel(c)]), text);
      return { input, help, value: () => input.value };
    }
    case 'textarea': {
      const input = h('textarea', { ...attrs, value: value === undefined ? '' : String(value) });
      return { input, help, value: () => input.value };
    }
    default: {
      const type = f.kind === 'number' || f.kind === 'password' ? f.kind : null;
      const input = h('input', { ...attrs, type, value: value === undefined ? '' : String(value) });
      return { input, help, value: () => input.value };
    }
  }
}

/**
 * The inputs of `fields` (the ones with an input: see `shownFields`), each filled from `obj`
 * (or the field's initial value when `obj` is null), in table order, by field name.
 * @param {Field[]} fields
 * @param {any} obj
 * @param {Sources} [src]
 * @returns {Map<string, Control>}
 */
export function controls(fields, obj, src = {}) {
  /** @type {Map<string, Control>} */
  const out = new Map();
  for (const f of fields) {
    if (f.kind === 'none') continue;
    const { input, help, value } = makeInput(f, initialValue(f, obj), src);
    const label = !src.isNew && f.editLabel ? f.editLabel : (f.label || f.name);
    const row = f.kind === 'checkboxes' || f.kind === 'roles' ? input : field(label, input, help || undefined);
    out.set(f.name, { field: f, input, row, value });
  }
  return out;
}

/**
 * The values of a form's inputs, by field name.
 * @param {Map<string, Control>} ctl
 * @returns {RawValues}
 */
export function valuesOf(ctl) {
  /** @type {RawValues} */
  const values = {};
  for (const [name, c] of ctl) values[name] = c.value();
  return values;
}

/**
 * The request body of a form built from `fields`: see `bodyOf`.
 * @param {Field[]} fields the whole table (its `none` fields may add to the body)
 * @param {Map<string, Control>} ctl
 * @param {{isNew?: boolean}} [opts]
 */
export const formBody = (fields, ctl, opts) => bodyOf(fields, valuesOf(ctl), opts);

/**
 * The rows of the controls of section `key`, in table order, each followed by what `after`
 * puts after that field (a preview, a warning, a list of suggestions).
 * @param {Map<string, Control>} ctl
 * @param {string} key
 * @param {Record<string, import('./dom.js').Child>} [after]
 */
export function rowsOf(ctl, key, after = {}) {
  return [...ctl.values()].filter((c) => c.field.section === key).map((c) => [c.row, after[c.field.name]]);
}

/**
 * The control of field `name`: the page's own table, so a miss is a bug.
 * @param {Map<string, Control>} ctl
 * @param {string} name
 */
export function control(ctl, name) {
  const c = ctl.get(name);
  if (!c) throw new Error(`no input for ${name}`);
  return c;
}
