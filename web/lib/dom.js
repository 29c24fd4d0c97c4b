// @ts-check
// Building the page. Every piece of data reaches it through textContent and attributes set
// here (never as HTML), so a job description such as <img onerror=…> is shown as text. The
// server's CSP forbids inline script as a second wall.

/**
 * What `h` and `svg` take as children: nodes, text (numbers and strings become text nodes),
 * nested lists, and nothing (null, undefined, false: left out).
 * @typedef {Node | string | number | boolean | null | undefined | ChildList} Child
 * @typedef {Array<Child>} ChildList
 */

/**
 * Attributes of `h` and `svg`: `onX` adds a listener, `value` and `checked` set the property,
 * true is an empty attribute, null, undefined and false leave the attribute out.
 * @typedef {Record<string, any> | null | undefined} Attrs
 */

/**
 * Creates an element: h('td', {class: 'x', onclick: f}, 'text', child, …).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') /** @type {HTMLInputElement} */ (el).value = v;
    else if (k === 'checked') /** @type {HTMLInputElement} */ (el).checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  appendChildren(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Creates an SVG element the way `h` creates HTML ones: attributes, listeners and text nodes.
 * @param {string} tag
 * @param {Attrs} [attrs]
 * @param {...Child} children
 * @returns {SVGElement}
 */
export function svg(tag, attrs = {}, ...children) {
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  appendChildren(el, children);
  return el;
}

/**
 * @param {Element} el
 * @param {ChildList} children
 */
function appendChildren(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) appendChildren(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/**
 * Text with XXL-JOB's `<br>` separators and newlines as line breaks, built from text nodes.
 * @param {unknown} text
 * @returns {Array<Node | string>}
 */
export function lines(text) {
  /** @type {Array<Node | string>} */
  const out = [];
  String(text ?? '').split(/<br\s*\/?>|\n/i).forEach((part, i) => { if (i) out.push(h('br')); out.push(part); });
  return out;
}

/**
 * The element of `selector` under `root`, typed: a page's own markup, so a miss is a bug.
 * @template {Element} T
 * @param {ParentNode} root
 * @param {string} selector
 * @param {new () => T} type the element's class, e.g. HTMLInputElement
 * @returns {T}
 */
export function pick(root, selector, type) {
  const el = root.querySelector(selector);
  if (!(el instanceof type)) throw new Error(`no ${type.name} at ${selector}`);
  return el;
}

/**
 * A promise resolved after `ms` milliseconds.
 * @param {number} ms
 * @returns {Promise<void>}
 */
export const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
