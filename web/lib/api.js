// @ts-check
// The admin's API as the console calls it: JSON in and out, the session's CSRF token on every
// state change, and the answers the console asks once per login.
import { currentUser, setUser, oncePerLogin } from './session.js';
import { requestSchema } from './fields.js';

/**
 * An API failure: the admin's message, the HTTP status and the field at fault, when it names one.
 * @typedef {Error & {status?: number, field?: string}} ApiError
 */

/** What to do when the session turned out to be over (the router shows the login form). */
let signedOut = () => {};

/**
 * Sets what happens when a request finds the session over (401).
 * @param {() => void} fn
 */
export function whenSignedOut(fn) { signedOut = fn; }

/**
 * Calls the API; state changes carry the session's CSRF token. Throws an {@link ApiError}.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export async function api(method, path, body) {
  return call(method, path, body === undefined ? undefined : { type: 'application/json', text: JSON.stringify(body) });
}

/**
 * Sends `text` as it is, of media type `type` (an `.ics` file for an import), as `api` sends
 * JSON: with the CSRF token, the answer read as JSON. Throws an {@link ApiError}.
 * @param {string} method
 * @param {string} path
 * @param {string} text
 * @param {string} type
 * @returns {Promise<any>}
 */
export const apiText = (method, path, text, type) => call(method, path, { type, text });

/**
 * @param {string} method
 * @param {string} path
 * @param {{type: string, text: string}} [body]
 * @returns {Promise<any>}
 */
async function call(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { 'Accept': 'application/json' };
  if (body !== undefined) headers['Content-Type'] = body.type;
  const user = currentUser();
  if (method !== 'GET' && user && user.csrf_token) headers['X-CSRF-Token'] = user.csrf_token;
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : body.text, credentials: 'same-origin' });
  if (r.status === 401 && path !== '/console/api/login') { setUser(null); signedOut(); }
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) throw Object.assign(new Error((data && data.error) || r.statusText), { status: r.status, field: data && data.field });
  return data;
}

/**
 * The values of every job and run enum, from the admin (`/v1/options`), asked once per login.
 * @returns {Promise<Record<string, any>>}
 */
export const options = () => oncePerLogin('options', () => api('GET', '/v1/options'));

/**
 * The schema of a job's request body, from the admin's OpenAPI document (the body of
 * `POST /v1/jobs`), asked once per login; null when the admin has none to give, and the job
 * form shows the fields it knows.
 * @returns {Promise<any>}
 */
export const jobBodySchema = () => oncePerLogin('job-body-schema', async () => {
  try {
    const doc = await api('GET', '/v1/openapi.json');
    return { doc, schema: requestSchema(doc, 'post', '/v1/jobs') };
  } catch {
    return { doc: null, schema: null };
  }
});

/** Every executor group the user may see. @returns {Promise<any[]>} */
export const groupsList = () => api('GET', '/v1/groups');

/**
 * The business calendars, for the job and workflow forms' calendar select; none when they
 * cannot be read (the select still offers "none" and the calendar the object names).
 * @returns {Promise<any[]>}
 */
export const calendarsList = () => api('GET', '/v1/calendars').catch(() => []);
