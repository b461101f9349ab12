import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkQueue } from '../../controller/util/work-queue.ts';

test('work queue: duplicate adds of a waiting key collapse into one run', async () => {
  const seen: string[] = [];
  const q = new WorkQueue(async (k) => { seen.push(k); await sleep(10); }, { concurrency: 1 });
  q.add('busy'); // occupies the only worker, so the adds below wait in the queue
  q.add('a'); q.add('b'); q.add('a'); q.add('b'); q.add('a');
  await q.idle();
  assert.deepEqual(seen, ['busy', 'a', 'b']);
});

test('work queue: a key is never processed concurrently; re-added in flight → runs again after', async () => {
  let running = 0;
  let maxRunning = 0;
  let runs = 0;
  const q = new WorkQueue(async () => {
    running++; runs++;
    maxRunning = Math.max(maxRunning, running);
    await sleep(20);
    running--;
  }, { concurrency: 4 });
  q.add('k');
  await sleep(5);
  q.add('k'); q.add('k');
  await sleep(60);
  await q.idle();
  assert.equal(maxRunning, 1);
  assert.equal(runs, 2);
});

test('work queue: different keys run in parallel up to the concurrency', async () => {
  let running = 0;
  let maxRunning = 0;
  const q = new WorkQueue(async () => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    await sleep(20);
    running--;
  }, { concurrency: 3 });
  for (let i = 0; i < 10; i++) q.add(`k${i}`);
  await q.idle();
  assert.equal(maxRunning, 3);
});

test('work queue: addAfter delays and the earliest timer wins', async () => {
  const seen: Array<[string, number]> = [];
  const start = Date.now();
  const q = new WorkQueue(async (k) => { seen.push([k, Date.now() - start]); });
  q.addAfter('x', 200);
  q.addAfter('x', 30);
  await sleep(120);
  assert.equal(seen.length, 1);
  assert.ok(seen[0][1] >= 25, `ran at ${seen[0][1]} ms`);
  await sleep(150);
  assert.equal(seen.length, 1, 'the later timer was replaced, not added');
});

test('work queue: failures requeue with growing backoff until forgotten', async () => {
  let calls = 0;
  const errors: unknown[] = [];
  const q = new WorkQueue(async (k) => {
    calls++;
    if (calls < 4) throw new Error('boom');
    q.forget(k);
  }, { baseRetryMs: 5, onError: (_k, e) => errors.push(e) });
  q.add('k');
  await sleep(200);
  assert.equal(calls, 4);
  assert.equal(errors.length, 3);
});
