// @ts-check
// A backfill's progress in words (web/lib/backfill.js), as the Backfills page shows it: what
// ran of how many, then only the counts that are not zero, in English and Chinese.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backfillProgress } from '../../web/lib/backfill.js';
import { setLang } from '../../web/i18n.js';

/** @type {import('../../web/lib/backfill.js').Backfill} */
const RUNNING = {
  id: 4, job_id: 7, workflow_id: null, from: 0, to: 1, at_once: 3, newest_first: false, state: 'running', fires: 30, already: 2,
  waiting: 20, running: 3, succeeded: 6, failed: 1, created_by: 'ops', created_at: 0, ended_at: null,
};

test('what ran of how many, then failures, runs under way and days backfilled before', () => {
  setLang('en');
  assert.equal(backfillProgress(RUNNING), '7 / 30 run, 1 failed, 3 running, 2 backfilled before');
  const done = { ...RUNNING, state: /** @type {const} */ ('done'), waiting: 0, running: 0, succeeded: 30, failed: 0, already: 0 };
  assert.equal(backfillProgress(done), '30 / 30 run');
});

test('in Chinese', () => {
  setLang('zh');
  assert.equal(backfillProgress(RUNNING), '已运行 7 / 30, 1 个失败, 3 个运行中, 2 个已补过');
  setLang('en');
});
