// @ts-check
// A backfill as the console shows it: what it has done, in words.
import { t } from '../i18n.js';

/**
 * A backfill as the admin shows it.
 * @typedef {{ id: number, job_id: number | null, workflow_id: number | null, from: number, to: number, at_once: number, newest_first: boolean,
 *   state: 'running' | 'done' | 'cancelled', fires: number, already: number, waiting: number, running: number,
 *   succeeded: number, failed: number, created_by: string, created_at: number, ended_at: number | null }} Backfill
 */

/**
 * What a backfill has done, in words: "12 / 30 run, 1 failed, 3 running".
 * @param {Backfill} b
 */
export function backfillProgress(b) {
  const ran = b.succeeded + b.failed;
  const parts = [t('backfill_ran').replace('{n}', String(ran)).replace('{of}', String(b.fires))];
  if (b.failed) parts.push(t('backfill_failed_n').replace('{n}', String(b.failed)));
  if (b.running) parts.push(t('backfill_running_n').replace('{n}', String(b.running)));
  if (b.already) parts.push(t('backfill_already_n').replace('{n}', String(b.already)));
  return parts.join(', ');
}
