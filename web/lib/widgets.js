// @ts-check
// Pieces the list and detail pages share: a row's action menu, refreshing a list while it is
// shown, and jobs looked up by id.
import { h } from './dom.js';
import { api } from './api.js';
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
  return menu;
}

const REFRESH_MS = 10000;

/**
 * Calls `draw(true)` every 10 s while `root` shows this page and the tab is visible.
 * @param {HTMLElement} root
 * @param {(keep: boolean) => unknown} draw
 */
export function autoRefresh(root, draw) {
  const here = location.hash;
  const timer = setInterval(() => {
    if (location.hash !== here || !root.isConnected) { clearInterval(timer); return; }
    // An open menu or dialog is the user's: redrawing would close it.
    if (document.hidden || root.querySelector('details.menu[open]') || document.querySelector('dialog[open]')) return;
    draw(true);
  }, REFRESH_MS);
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
