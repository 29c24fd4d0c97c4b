// @ts-check
// The GLUE script editor (admins): the source with its keywords, strings and comments
// highlighted, its saved versions, a diff against any of them, and restoring one.
import { h } from '../lib/dom.js';
import { api } from '../lib/api.js';
import { go } from '../lib/nav.js';
import { fmtTime } from '../lib/time.js';
import { errorBox } from '../lib/forms.js';
import { t } from '../i18n.js';

/** Keywords per GLUE language; everything else is shown as plain text. @type {Record<string, string>} */
const KEYWORDS = {
  shell: 'if then else elif fi for do done while until case esac in function return local export readonly echo exit set unset shift source',
  python: 'def return if elif else for while in not and or is None True False import from as class try except finally raise with lambda pass break continue yield global print',
  js: 'function return if else for while do in of const let var new class try catch finally throw typeof instanceof async await import export from null undefined true false this switch case break continue',
};
/** @type {Record<string, string>} */
const LANG = { GLUE_SHELL: 'shell', GLUE_PYTHON: 'python', GLUE_NODEJS: 'js', GLUE_PHP: 'js', GLUE_GROOVY: 'js', GLUE_POWERSHELL: 'shell' };

/**
 * Highlights keywords, strings and comments of `src`. Tokens become text nodes inside spans,
 * so source text is never parsed as HTML.
 * @param {string} src
 * @param {string} glueType
 */
export function highlight(src, glueType) {
  const lang = LANG[glueType] || 'shell';
  const comment = lang === 'js' ? String.raw`\/\/[^\n]*|\/\*[\s\S]*?\*\/` : String.raw`#[^\n]*`;
  const dq = String.raw`"(?:\\.|[^"\\\n])*"`;
  const sq = String.raw`'(?:\\.|[^'\\\n])*'`;
  const str = lang === 'python' ? [String.raw`"""[\s\S]*?"""`, String.raw`'''[\s\S]*?'''`, dq, sq].join('|')
    : lang === 'js' ? [dq, sq, String.raw`\x60(?:\\.|[^\x60\\])*\x60`].join('|')
      : [dq, String.raw`'[^']*'`].join('|');
  const kw = `\\b(?:${KEYWORDS[lang].split(' ').join('|')})\\b`;
  const re = new RegExp(`(${comment})|(${str})|(${kw})`, 'g');
  const out = h('pre', { class: 'code', id: 'highlighted' });
  let last = 0; let m;
  while ((m = re.exec(src))) {
    out.append(src.slice(last, m.index));
    out.append(h('span', { class: m[1] ? 'cm' : m[2] ? 'str' : 'kw' }, m[0]));
    last = re.lastIndex;
  }
  out.append(src.slice(last));
  return out;
}

/**
 * Line diff of `a` (old) and `b` (new) by longest common subsequence.
 * @param {string} a
 * @param {string} b
 */
export function diffLines(a, b) {
  const A = a.split('\n'); const B = b.split('\n');
  const out = h('pre', { class: 'code diff', id: 'diff' });
  if (A.length * B.length > 4e6) { out.append(t('too_long_to_diff')); return out; }
  // L[i][j]: number of common lines of A[i..] and B[j..].
  const L = Array.from({ length: A.length + 1 }, () => new Uint32Array(B.length + 1));
  for (let i = A.length - 1; i >= 0; i--) {
    for (let j = B.length - 1; j >= 0; j--) L[i][j] = A[i] === B[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  }
  let i = 0; let j = 0;
  while (i < A.length || j < B.length) {
    if (i < A.length && j < B.length && A[i] === B[j]) { out.append(h('div', {}, `  ${A[i]}`)); i++; j++; }
    else if (i < A.length && (j === B.length || L[i + 1][j] >= L[i][j + 1])) { out.append(h('div', { class: 'del' }, `- ${A[i]}`)); i++; }
    else { out.append(h('div', { class: 'add' }, `+ ${B[j]}`)); j++; }
  }
  return out;
}

/**
 * `#script/ID`.
 * @param {HTMLElement} root
 * @param {string[]} args
 */
export async function script(root, args) {
  const id = Number(args[0]);
  /** @type {[any, any[]]} */
  const [job, versions] = await Promise.all([api('GET', `/v1/jobs/${id}`), api('GET', `/v1/jobs/${id}/glue`)]);
  const ta = h('textarea', { class: 'src', name: 'glue_source', spellcheck: 'false', value: job.glue_source });
  const view = h('div', { id: 'script-view' });
  const msg = h('div');
  const show = () => view.replaceChildren(highlight(ta.value, job.glue_type));
  ta.addEventListener('input', show); show();
  // Tab inserts a tab instead of leaving the editor.
  ta.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Tab' || ev.shiftKey) return;
    ev.preventDefault();
    ta.setRangeText('\t', ta.selectionStart, ta.selectionEnd, 'end'); show();
  });
  root.replaceChildren(h('h2', {}, `${t('script')} — #${job.id} ${job.description} (${job.glue_type})`), ta, view,
    h('button', { type: 'button', id: 'save-script', onclick: async () => { try { await api('PATCH', `/v1/jobs/${id}`, { glue_source: ta.value }); go(`#script/${id}`); } catch (e) { msg.replaceChildren(errorBox(e)); } } }, t('save')),
    h('button', { type: 'button', onclick: () => go('#jobs') }, t('cancel')), msg,
    h('h3', {}, t('history')), versions.length ? '' : h('p', {}, t('none')),
    h('table', { id: 'versions' }, versions.map((v) => h('tr', { 'data-version': v.id }, h('td', {}, fmtTime(v.created_at, job.time_zone)), h('td', {}, v.author), h('td', { class: 'remark' }, v.remark || ''),
      h('td', {}, h('button', { type: 'button', class: 'diff', onclick: () => view.replaceChildren(diffLines(v.glue_source, ta.value)) }, t('diff')),
        h('button', { type: 'button', class: 'restore', onclick: () => { ta.value = v.glue_source; show(); msg.replaceChildren(h('p', { class: 'ok' }, t('restored'))); } }, t('restore')))))));
}
