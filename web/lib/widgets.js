// @ts-check
// Pieces the list and detail pages share: a row's action menu, refreshing a list while it is
// shown, jobs looked up by id, and the channel names suggested in the job and group forms.
import { h } from './dom.js';
import { api } from './api.js';
import { channelSuggestions } from './channels.js';
import { t } from '../i18n.js';

/**
 * A row's actions in one menu (a `<details>` pop-up), so a row keeps one line however many
 * actions it has. Each item is `[label, fn]`; the menu closes when one is chosen.
 * @param {Array<[string, () => unknown] | null | false>} items
 */
export function actionMenu(items) {
  const menu = h('details', { class: 'menu' }, h('summary', { title: t('actions') }, `${t('actions')} ▾`));
  const list = h('div', { class: 'menu-items' });
  for (const it of items) {
    if (!it) continue;
    const [label, fn] = it;
    list.append(h('button', { type: 'button', 'data-action': label, onclick: () => { menu.open = false; fn(); } }, t(label)));
  }
  menu.append(list);
  // The items float over the page (fixed to the window) rather than hang below the row: a
  // table scrolls sideways inside the page, and would clip a menu at its bottom edge.
  const place = () => placeMenu(menu, list);
  menu.addEventListener('toggle', () => {
    if (menu.open) {
      place();
      window.addEventListener('scroll', place, true);
      window.addEventListener('resize', place);
    } else {
      window.removeEventListener('scroll', place, true);
      window.removeEventListener('resize', place);
    }
  });
  return menu;
}

/**
 * Puts an open menu's items under its button, right-aligned with it, or above it when the
 * window has no room below; always inside the window.
 * @param {HTMLDetailsElement} menu
 * @param {HTMLElement} list
 */
function placeMenu(menu, list) {
  const button = /** @type {HTMLElement} */ (menu.querySelector('summary')).getBoundingClientRect();
  list.style.position = 'fixed';
  list.style.right = 'auto';
  const { offsetWidth: w, offsetHeight: ht } = list;
  const below = button.bottom + 2;
  const top = below + ht <= window.innerHeight ? below : Math.max(0, button.top - ht - 2);
  list.style.top = `${top}px`;
  list.style.left = `${Math.max(0, Math.min(button.right - w, window.innerWidth - w))}px`;
}

const REFRESH_MS = 10000;

/**
 * Calls `draw(true)` every 10 s (or `every` ms) while `root` shows this page and the tab is visible.
 * @param {HTMLElement} root
 * @param {(keep: boolean) => unknown} draw
 * @param {number} [every]
 */
export function autoRefresh(root, draw, every = REFRESH_MS) {
  const here = location.hash;
  const timer = setInterval(() => {
    if (location.hash !== here || !root.isConnected) { clearInterval(timer); return; }
    // An open menu or dialog is the user's: redrawing would close it.
    if (document.hidden || root.querySelector('details.menu[open]') || document.querySelector('dialog[open]')) return;
    draw(true);
  }, every);
}

/**
 * Jobs by id, asked of the admin once per page: runs name their job and use its time zone.
 */
export function jobCache() {
  /** @type {Map<number, any>} */
  const known = new Map();
  return {
    /** @param {number} id */
    get: (id) => known.get(id),
    /**
     * Loads the jobs of `ids` not known yet; a job that is gone (or not ours) stays null.
     * @param {number[]} ids
     */
    async load(ids) {
      const missing = [...new Set(ids)].filter((id) => !known.has(id));
      await Promise.all(missing.map(async (id) => { try { known.set(id, await api('GET', `/v1/jobs/${id}`)); } catch { known.set(id, null); } }));
    },
  };
}

/**
 * The suggestions of an `alarm_channels` input (the job and group forms; the field table points
 * the input at the datalist `channel-names`): for an admin, the names of the admin's alarm
 * channels, each offered as the next entry of the comma-separated list typed so far. Channels
 * are the admins' to list, so others get an empty list and type the names.
 * @param {HTMLInputElement} input
 * @param {boolean} admin
 */
export function channelNames(input, admin) {
  const list = h('datalist', { id: 'channel-names' });
  if (!admin) return list;
  /** @type {string[]} */
  let names = [];
  const fill = () => list.replaceChildren(...channelSuggestions(input.value, names).map((v) => h('option', { value: v })));
  input.addEventListener('input', fill);
  api('GET', '/v1/alarm-channels')
    .then((/** @type {any[]} */ all) => { names = all.map((c) => String(c.name)); fill(); })
    .catch(() => { /* no suggestions: the names can still be typed */ });
  return list;
}
