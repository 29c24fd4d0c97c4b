// @ts-check
// Moving between pages. The router draws the page of the location's hash whenever it changes.

/**
 * Shows the page of `hash`; the page shown already is drawn again (after a save, its list
 * shows the change).
 * @param {string} hash
 */
export function go(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}
