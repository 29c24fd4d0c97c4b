// @ts-check
// The console's session state, in one place: who is logged in, what the admin told this login
// once (its enum values, the job body's schema), and the zone times are shown in. Everything
// else reads it through these functions, so a logout or a new login clears every cache at once
// and no page keeps a copy that outlives its user.

/**
 * The logged-in user, as `/console/api/me` and the login answer it.
 * @typedef {object} User
 * @property {string} username
 * @property {boolean} admin
 * @property {boolean} can_write
 * @property {number[]} group_ids
 * @property {Array<{group_id: number, role: string}>} [group_roles]
 * @property {string} csrf_token
 */

/** The roles a user may hold in a group, from the least. */
export const GROUP_ROLES = ['viewer', 'operator', 'editor', 'group_admin'];

/** @type {User | null} */
let user = null;
/**
 * Answers asked once per login, by name; a promise each, so callers at the same time share
 * one request.
 * @type {Map<string, Promise<any>>}
 */
const remembered = new Map();

/** The logged-in user, or null before the login (or after a logout or an expired session). */
export function currentUser() { return user; }

/**
 * Sets (or, with null, forgets) the logged-in user. Answers remembered for the previous one
 * are dropped: another user may see other groups and jobs.
 * @param {User | null} u
 */
export function setUser(u) {
  user = u;
  remembered.clear();
}

/**
 * The logged-in user; for pages, which are shown only to one.
 * @returns {User}
 */
export function me() {
  if (!user) throw new Error('not logged in');
  return user;
}

/**
 * Whether the current user holds `role` or more in group `id` (the server checks it again).
 * Administrators hold every role everywhere.
 * @param {number} id
 * @param {string} role
 */
export function holds(id, role) {
  if (!user) return false;
  if (user.admin) return true;
  const grant = (user.group_roles || []).find((g) => g.group_id === id);
  return !!grant && GROUP_ROLES.indexOf(grant.role) >= GROUP_ROLES.indexOf(role);
}

/**
 * Whether the current user holds `role` or more in some group (or is an administrator).
 * @param {string} role
 */
export function holdsSomewhere(role) {
  if (!user) return false;
  return user.admin || (user.group_roles || []).some((g) => GROUP_ROLES.indexOf(g.role) >= GROUP_ROLES.indexOf(role));
}

/**
 * Whether the current user may run jobs of group `id`: trigger, kill, start, stop.
 * @param {number} id
 */
export const mayOperate = (id) => holds(id, 'operator');

/**
 * Whether the current user may edit jobs of group `id`: create, change, delete.
 * @param {number} id
 */
export const mayEdit = (id) => holds(id, 'editor');

/**
 * `load()`'s answer, asked once per login under `key`; a failed answer is asked again next time.
 * @template T
 * @param {string} key
 * @param {() => Promise<T>} load
 * @returns {Promise<T>}
 */
export function oncePerLogin(key, load) {
  let p = remembered.get(key);
  if (!p) {
    p = load();
    remembered.set(key, p);
    const mine = p;
    p.catch(() => { if (remembered.get(key) === mine) remembered.delete(key); });
  }
  return p;
}

/**
 * Which zone times are shown in: `job` (each job's own zone, the default), `browser` or `utc`.
 * Kept in the browser like the language.
 */
export const ZONE_MODES = ['job', 'browser', 'utc'];
/** @type {string | undefined} */
let zone;

/** The zone mode chosen in the top bar (read from the browser's storage the first time). */
export function zoneMode() {
  if (zone === undefined) {
    const kept = typeof localStorage === 'undefined' ? null : localStorage.getItem('chime.tz');
    zone = kept && ZONE_MODES.includes(kept) ? kept : 'job';
  }
  return zone;
}

/**
 * Chooses the zone mode (an unknown one is `job`) and keeps it in the browser.
 * @param {string} m
 */
export function setZoneMode(m) {
  zone = ZONE_MODES.includes(m) ? m : 'job';
  if (typeof localStorage !== 'undefined') localStorage.setItem('chime.tz', zone);
}
