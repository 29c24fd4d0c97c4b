// @ts-check
// Times as the console shows them: one format, in the zone the top bar chooses.
import { zoneMode } from './session.js';

const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/**
 * The zone a time of a job in `jobZone` is shown in, under the current mode.
 * @param {string} [jobZone]
 */
export function shownZone(jobZone) {
  const mode = zoneMode();
  if (mode === 'utc') return 'UTC';
  if (mode === 'job' && jobZone) return jobZone;
  return browserZone();
}

/** Formatters by zone: making one is slow, and a list formats hundreds of times. */
const formats = new Map();

/** @param {string} timeZone */
const formatter = (timeZone) => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });

/**
 * Epoch ms as `YYYY-MM-DD HH:MM:SS Zone`, the console's one date format: in the job's zone
 * (`jobZone`, when the console shows job zones), the browser's zone or UTC. Times that belong
 * to no job (heartbeats, audit) use the browser's zone in job mode.
 * @param {number | null | undefined} ms
 * @param {string} [jobZone]
 */
export function fmtTime(ms, jobZone) {
  if (!ms) return '';
  let zone = shownZone(jobZone);
  let f = formats.get(zone);
  if (!f) {
    try {
      f = formatter(zone);
    } catch {
      // A zone this browser does not know: UTC, named as such, rather than a wrong local time.
      zone = 'UTC';
      f = formatter(zone);
    }
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((/** @type {Intl.DateTimeFormatPart} */ x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${zone}`;
}

/**
 * Epoch ms of a `datetime-local` value (read in UTC when the console shows UTC, else in the
 * browser's zone), or undefined when empty.
 * @param {HTMLInputElement} input
 */
export const localMs = (input) => (input.value ? Date.parse(zoneMode() === 'utc' ? `${input.value}Z` : input.value) : undefined);
