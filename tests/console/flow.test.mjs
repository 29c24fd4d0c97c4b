// @ts-check
// Flow control as the Queue page shows it, without a page (web/lib/flow.js): limit names and
// their API paths, how full a limit is, a queued run's state and priority, waits in words, and
// when a refresh may overwrite an input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LIMIT_KINDS, splitLimitName, limitName, limitPath, fullness, queueState, priorityNow, waitParts, fmtWait, mayRefreshInput, nodeFlow, shownKey, NO_KEY } from '../../web/lib/flow.js';
import { setLang } from '../../web/i18n.js';

test("a limit's name says what it applies to, and is made from a kind and a value", () => {
  assert.deepEqual(LIMIT_KINDS, ['key', 'group', 'executor']);
  assert.deepEqual(splitLimitName('warehouse-db'), { kind: 'key', value: 'warehouse-db' });
  assert.deepEqual(splitLimitName('group:billing'), { kind: 'group', value: 'billing' });
  assert.deepEqual(splitLimitName('executor:http://10.0.0.5:9999'), { kind: 'executor', value: 'http://10.0.0.5:9999' });
  assert.equal(limitName('key', ' warehouse-db '), 'warehouse-db');
  assert.equal(limitName('group', 'billing'), 'group:billing');
  // The admin refuses an address with a trailing slash: the form drops it.
  assert.equal(limitName('executor', 'http://10.0.0.5:9999/'), 'executor:http://10.0.0.5:9999');
  for (const name of ['warehouse-db', 'group:billing', 'executor:http://10.0.0.5:9999']) {
    const { kind, value } = splitLimitName(name);
    assert.equal(limitName(kind, value), name, 'split and made again, a name is the same');
  }
});

test("a limit's path holds its name as one segment, an executor's address encoded whole", () => {
  assert.equal(limitPath('warehouse-db'), '/v1/limits/warehouse-db');
  assert.equal(limitPath('group:billing'), '/v1/limits/group%3Abilling');
  assert.equal(limitPath('executor:http://10.0.0.5:9999'), '/v1/limits/executor%3Ahttp%3A%2F%2F10.0.0.5%3A9999');
  assert.equal(limitPath('a/../b?c#d'), '/v1/limits/a%2F..%2Fb%3Fc%23d', 'nothing in a name leaves its segment');
});

test('a limit is free below its maximum, full at it, over it past it', () => {
  assert.equal(fullness({ running: 0, max_running: 1 }), 'free');
  assert.equal(fullness({ running: 1, max_running: 1 }), 'full');
  assert.equal(fullness({ running: 3, max_running: 2 }), 'over');
});

test("a queued run's state and its priority as the queue weighs it now", () => {
  assert.equal(queueState({ leaving: false, skip_queue: false }), 'waiting');
  assert.equal(queueState({ leaving: false, skip_queue: true }), 'sent_on');
  assert.equal(queueState({ leaving: true, skip_queue: true }), 'leaving');
  assert.equal(priorityNow({ priority: 5, waited_ms: 59_999 }), 5);
  assert.equal(priorityNow({ priority: 5, waited_ms: 12 * 60_000 + 1 }), 17, 'a point per whole minute waited');
  assert.equal(priorityNow({ priority: -3, waited_ms: -10 }), -3, "a clock step back costs nothing");
});

test('a wait in its two largest units, in either language', () => {
  assert.deepEqual(waitParts(0), [[0, 's']]);
  assert.deepEqual(waitParts(999), [[0, 's']]);
  assert.deepEqual(waitParts(-5000), [[0, 's']]);
  assert.deepEqual(waitParts(45_000), [[45, 's']]);
  assert.deepEqual(waitParts(200_000), [[3, 'min'], [20, 's']]);
  assert.deepEqual(waitParts(2 * 3600_000 + 5_000), [[2, 'h']], 'a zero unit after the first ends it');
  assert.deepEqual(waitParts(3600_000 + 5 * 60_000 + 59_000), [[1, 'h'], [5, 'min']]);
  assert.deepEqual(waitParts(3 * 86400_000 + 4 * 3600_000), [[3, 'd'], [4, 'h']]);
  setLang('en');
  assert.equal(fmtWait(200_000), '3 min 20 s');
  assert.equal(fmtWait(0), '0 s');
  setLang('zh');
  assert.equal(fmtWait(200_000), '3分 20秒');
  assert.equal(fmtWait(3 * 86400_000 + 4 * 3600_000), '3天 4小时');
  setLang('en');
});

test('a refresh leaves an input being edited alone', () => {
  assert.equal(mayRefreshInput({ value: '3' }, '3', false), true);
  assert.equal(mayRefreshInput({ value: '3' }, '3', true), false, 'not while it has the focus');
  assert.equal(mayRefreshInput({ value: '5' }, '3', false), false, 'not once the user changed it');
});

test("a workflow node's own priority and key: empty fields leave the job's, '-' takes its key away", () => {
  assert.deepEqual(nodeFlow('', ''), {}, "nothing over the job's");
  assert.deepEqual(nodeFlow(' 50 ', ' warehouse-db '), { priority: 50, concurrency_key: 'warehouse-db' });
  assert.deepEqual(nodeFlow('-3', NO_KEY), { priority: -3, concurrency_key: '' });
  assert.deepEqual(nodeFlow('1.5', ''), { priority: '1.5' }, 'not a whole number: sent as typed, for the admin to refuse');
  for (const key of [undefined, '', 'warehouse-db']) {
    const shown = shownKey(key);
    assert.deepEqual(nodeFlow('', shown).concurrency_key, key, `${key} shown as '${shown}' and read back`);
  }
});
