// The work queue on a manual clock: handlers block on gates the test opens, delays fire when the test
// moves time, so every "not yet" is a fact about state, never a sleep.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../controller/core/clock.ts';
import { WorkQueue } from '../../controller/core/work-queue.ts';

/** A promise the test resolves by hand. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

/** Lets queued microtasks (handler starts and ends) run. */
const settle = () => new Promise<void>((r) => setImmediate(r));

test('work queue: duplicate adds of a waiting key collapse into one run', async () => {
  const seen: string[] = [];
  const busy = gate();
  const q = new WorkQueue(
    async (k) => {
      seen.push(k);
      if (k === 'busy') await busy.wait;
    },
    { concurrency: 1 },
  );
  q.add('busy'); // occupies the only worker, so the adds below wait in the queue
  q.add('a');
  q.add('b');
  q.add('a');
  q.add('b');
  q.add('a');
  assert.equal(q.length, 2);
  busy.open();
  await q.idle();
  assert.deepEqual(seen, ['busy', 'a', 'b']);
});

test('work queue: a key is never processed concurrently; re-added in flight → runs again after', async () => {
  let running = 0;
  let maxRunning = 0;
  const gates = [gate(), gate()];
  let runs = 0;
  const q = new WorkQueue(
    async () => {
      const g = gates[runs++];
      running++;
      maxRunning = Math.max(maxRunning, running);
      await g.wait;
      running--;
    },
    { concurrency: 4 },
  );
  q.add('k');
  await settle();
  q.add('k');
  q.add('k');
  await settle();
  assert.equal(runs, 1, 'the re-add waits for the run in flight');
  gates[0].open();
  await settle();
  assert.equal(runs, 2);
  gates[1].open();
  await q.idle();
  assert.equal(maxRunning, 1);
  assert.equal(runs, 2);
});

test('work queue: different keys run in parallel up to the concurrency', async () => {
  let running = 0;
  let maxRunning = 0;
  const all = gate();
  const q = new WorkQueue(
    async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await all.wait;
      running--;
    },
    { concurrency: 3 },
  );
  for (let i = 0; i < 10; i++) q.add(`k${i}`);
  await settle();
  assert.equal(running, 3);
  assert.equal(q.length, 7);
  all.open();
  await q.idle();
  assert.equal(maxRunning, 3);
});

test('work queue: addFirst goes ahead of everything queued with add', async () => {
  const seen: string[] = [];
  const busy = gate();
  const q = new WorkQueue(
    async (k) => {
      seen.push(k);
      if (k === 'busy') await busy.wait;
    },
    { concurrency: 1 },
  );
  q.add('busy');
  q.add('a');
  q.add('b');
  q.addFirst('b');
  q.addFirst('c');
  busy.open();
  await q.idle();
  assert.deepEqual(seen, ['busy', 'b', 'c', 'a']);
});

test('work queue: addAfter fires when the clock passes it, and the earliest timer wins', async () => {
  const clock = new ManualClock();
  const seen: number[] = [];
  const start = clock.now().getTime();
  const q = new WorkQueue(
    async () => {
      seen.push(clock.now().getTime() - start);
    },
    { clock },
  );
  q.addAfter('x', 200);
  q.addAfter('x', 30);
  q.addAfter('x', 100); // later than the armed 30 ms: ignored
  assert.deepEqual(clock.pending(), [30], 'one timer, the earliest');
  clock.advance(29);
  await settle();
  assert.deepEqual(seen, []);
  clock.advance(1);
  await q.idle();
  assert.deepEqual(seen, [30]);
  clock.advance(1_000);
  await q.idle();
  assert.deepEqual(seen, [30], 'the replaced timers never fire');
});

test('work queue: failures requeue with doubling backoff until forgotten, then start over', async () => {
  const clock = new ManualClock();
  let failuresLeft = 3;
  const errors: unknown[] = [];
  const q = new WorkQueue(
    async (k) => {
      if (failuresLeft-- > 0) throw new Error('boom');
      q.forget(k);
    },
    { baseRetryMs: 5, clock, onError: (_k, e) => errors.push(e) },
  );
  q.add('k');
  await q.idle();
  assert.deepEqual(clock.pending(), [5]);
  clock.advance(5);
  await q.idle();
  assert.deepEqual(clock.pending(), [10]);
  clock.advance(10);
  await q.idle();
  assert.deepEqual(clock.pending(), [20]);
  clock.advance(20);
  await q.idle();
  assert.equal(errors.length, 3);
  assert.deepEqual(clock.pending(), [], 'succeeded: nothing more scheduled');
  failuresLeft = 1;
  q.add('k');
  await q.idle();
  assert.deepEqual(clock.pending(), [5], 'forget reset the backoff');
});

test('work queue: stop cancels delayed work', async () => {
  const clock = new ManualClock();
  let runs = 0;
  const q = new WorkQueue(
    async () => {
      runs++;
    },
    { clock },
  );
  q.addAfter('k', 50);
  q.stop();
  assert.deepEqual(clock.pending(), []);
  clock.advance(100);
  await q.idle();
  assert.equal(runs, 0);
});
