// The one controller loop, on in-memory ports and a manual clock: what it starts, records, waits for and
// releases. Time only moves when a test advances it; "nothing happened" is read from state, not a sleep.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { ManualClock } from '../../controller/core/clock.ts';
import { Controller } from '../../controller/core/controller.ts';
import { desired, MemoryExecutor, MemorySink, MemorySource } from '../support/memory-ports.ts';

function setup(opts: { maxConcurrent?: number; budgetUSD?: number } = {}) {
  const clock = new ManualClock(new Date('2026-11-23T10:00:00Z'));
  const source = new MemorySource();
  const executor = new MemoryExecutor(() => clock.now());
  const sink = new MemorySink();
  const controller = new Controller({
    source,
    executor,
    sink,
    clock,
    logger: pino({ level: 'silent' }),
    maxConcurrent: opts.maxConcurrent ?? 4,
    budgetUSD: opts.budgetUSD,
    random: () => 0.5,
  });
  /** Lets every queued pass (and the passes they queue) finish. */
  const settle = async () => {
    for (let i = 0; i < 20; i++) {
      await controller.idle();
      await new Promise((r) => setImmediate(r));
    }
  };
  const status = (name: string) => sink.statuses.get(`default/${name}`);
  return { clock, source, executor, sink, controller, settle, status };
}

test('controller: runs episodes until a completion signal, then is settled', async () => {
  const t = setup();
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  assert.equal(t.status('a')?.phase, 'Running');
  assert.equal(t.executor.running.get('default/a')?.number, 1);
  assert.equal(t.controller.settled(), false);
  t.executor.finish('default/a', { exitCode: 0 });
  await t.settle();
  assert.equal(t.executor.running.get('default/a')?.number, 2, 'exit 0 without a signal: next episode at once');
  t.executor.finish('default/a', { exitCode: 0, completion: 'promise', costUSD: 0.3 });
  await t.settle();
  assert.equal(t.status('a')?.phase, 'Succeeded');
  assert.equal(t.status('a')?.costUSD, 0.3);
  assert.equal(t.controller.settled(), true);
  const ends = t.sink.events.filter((e) => e.reason === 'EpisodeSucceeded');
  assert.deepEqual([ends[0].details.episode, ends[0].details.costUSD], [2, 0.3]);
  assert.equal(t.sink.events.find((e) => e.reason === 'EpisodeStarted')?.details.handle, 'default/a#1');
});

test('controller: an episode start is on record before the executor is asked to start it', async () => {
  const t = setup();
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  const write = t.sink.writes.findIndex((w) => w.status.currentEpisode?.number === 1);
  assert.ok(write >= 0);
  assert.equal(t.sink.writes[write].beforeStart, true);
  assert.deepEqual(t.executor.calls, [{ op: 'start', key: 'default/a', number: 1 }]);
});

test('controller: the reconciler’s requeue-after is kept when it starts an episode: a stuck episode is stopped as timeout', async () => {
  const t = setup();
  t.source.set(desired('a', { limits: { episodeTimeoutSeconds: 60 } }));
  t.controller.start();
  await t.settle();
  assert.deepEqual(t.clock.pending(), [90_000], 'timeout + grace');
  t.clock.advance(89_999);
  await t.settle();
  assert.equal(t.executor.calls.filter((c) => c.op === 'stop').length, 0);
  t.clock.advance(1);
  await t.settle();
  assert.deepEqual(
    t.executor.calls.find((c) => c.op === 'stop'),
    { op: 'stop', key: 'default/a', number: 1, reason: 'timeout' },
  );
  assert.equal(t.status('a')?.lastEpisode?.outcome, 'timeout', 'the stop reason decides, not the process’s exit');
  assert.equal(t.status('a')?.consecutiveFailures, 1);
});

test('controller: --max-concurrent slots; a freed slot goes to the longest-waiting task', async () => {
  const t = setup({ maxConcurrent: 1 });
  for (const n of ['a', 'b', 'c']) t.source.set(desired(n));
  t.controller.start();
  await t.settle();
  assert.equal(t.executor.runningCount(), 1);
  assert.equal(t.status('b')?.reason, 'Queued');
  assert.equal(t.status('c')?.reason, 'Queued');
  t.executor.finish('default/a', { exitCode: 0, completion: 'promise' });
  await t.settle();
  assert.equal(t.executor.runningCount(), 1);
  assert.equal(t.executor.running.has('default/b'), true);
  assert.equal(t.status('c')?.reason, 'Queued');
});

test('controller: dependsOn waits, then starts; a failed dependency skips; a cycle fails', async () => {
  const t = setup();
  t.source.set(desired('a'));
  t.source.set(desired('b', { dependsOn: ['a'] }));
  t.source.set(desired('x', { dependsOn: ['y'] }));
  t.source.set(desired('y', { dependsOn: ['x'] }));
  t.controller.start();
  await t.settle();
  assert.equal(t.status('b')?.reason, 'DependenciesPending');
  assert.equal(t.status('x')?.reason, 'InvalidSpec');
  assert.match(t.status('x')?.message ?? '', /cycle/);
  t.executor.finish('default/a', { exitCode: 0, completion: 'promise' });
  await t.settle();
  assert.equal(t.executor.running.get('default/b')?.number, 1);

  const u = setup();
  u.source.set(desired('a', { limits: { maxConsecutiveFailures: 1 } }));
  u.source.set(desired('b', { dependsOn: ['a'] }));
  u.controller.start();
  await u.settle();
  u.executor.finish('default/a', { exitCode: 1 });
  await u.settle();
  assert.equal(u.status('a')?.phase, 'Skipped');
  assert.equal(u.status('b')?.reason, 'DependencyFailed');
});

test('controller: dependents of a task stopped for review wait while its auto-resume is scheduled, then run', async () => {
  const t = setup();
  t.source.set(desired('a', { limits: { maxEpisodes: 1 }, resume: { policy: 'Aggressive', cooldownSeconds: 60 } }));
  t.source.set(desired('b', { dependsOn: ['a'] }));
  t.controller.start();
  await t.settle();
  t.executor.finish('default/a', { exitCode: 0 });
  await t.settle();
  assert.equal(t.status('a')?.reason, 'MaxEpisodesReached');
  assert.ok(t.status('a')?.resume?.nextAutoResumeAt);
  assert.equal(t.status('b')?.reason, 'DependenciesPending', 'not skipped: a resumes in a minute');
  t.clock.advance(60_000);
  await t.settle();
  assert.equal(t.executor.running.get('default/a')?.number, 2);
  t.executor.finish('default/a', { exitCode: 0, completion: 'promise' });
  await t.settle();
  assert.equal(t.executor.running.get('default/b')?.number, 1);
});

test('controller: a dependency added later wakes its dependent', async () => {
  const t = setup();
  t.source.set(desired('b', { dependsOn: ['a'] }));
  t.controller.start();
  await t.settle();
  assert.equal(t.status('b')?.reason, 'DependenciesPending');
  assert.equal(t.controller.settled(), true, 'waiting on a task that does not exist: only an edit can change it');
  t.source.set(desired('a'));
  t.executor.running.size; // a starts
  await t.settle();
  t.executor.finish('default/a', { exitCode: 0, completion: 'promise' });
  await t.settle();
  assert.equal(t.executor.running.get('default/b')?.number, 1);
});

test('controller: the global budget counts every task’s recorded spend', async () => {
  const t = setup({ budgetUSD: 1 });
  t.sink.statuses.set('default/old', {
    ...(await import('../../controller/api/agent-task.ts')).emptyStatus(),
    phase: 'Succeeded',
    costUSD: 0.7,
  });
  t.source.set(desired('old'));
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  t.executor.finish('default/a', { exitCode: 0, costUSD: 0.4 });
  await t.settle();
  assert.equal(t.status('a')?.reason, 'GlobalBudgetExceeded');
  assert.equal(t.executor.runningCount(), 0);
});

test('controller: a failed episode waits out its backoff on the clock, then runs', async () => {
  const t = setup();
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  t.executor.finish('default/a', { exitCode: 1 });
  await t.settle();
  assert.equal(t.status('a')?.reason, 'Backoff');
  const wait = Date.parse(t.status('a')!.nextEpisodeAt!) - t.clock.now().getTime();
  assert.ok(wait > 0);
  t.clock.advance(wait - 1);
  await t.settle();
  assert.equal(t.executor.runningCount(), 0);
  t.clock.advance(1);
  await t.settle();
  assert.equal(t.executor.running.get('default/a')?.number, 2);
});

test('controller: a start that throws is retried with the same episode number, never renumbered', async () => {
  const t = setup();
  t.executor.failNextStart.add('default/a');
  t.controller.start();
  t.source.set(desired('a'));
  await t.settle();
  assert.equal(t.executor.runningCount(), 0);
  assert.ok(t.clock.pending().length > 0, 'a retry is scheduled');
  t.clock.advance(Math.max(...t.clock.pending().filter((d) => d < 1000)));
  await t.settle();
  assert.deepEqual(
    t.executor.calls.map((c) => c.number),
    [1, 1],
  );
  assert.equal(t.executor.running.get('default/a')?.number, 1);
  assert.equal(t.status('a')?.episodes, 1);
});

test('controller: an episode on record that the executor never saw is recorded interrupted and rerun', async () => {
  const t = setup();
  const { emptyStatus } = await import('../../controller/api/agent-task.ts');
  t.sink.statuses.set('default/a', {
    ...emptyStatus(),
    phase: 'Running',
    episodes: 3,
    currentEpisode: { number: 3, startedAt: t.clock.now().toISOString() },
    observedGeneration: 1,
  });
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  assert.equal(t.status('a')?.lastEpisode?.outcome, 'interrupted');
  assert.equal(t.executor.running.get('default/a')?.number, 4);
  assert.equal(t.status('a')?.consecutiveFailures, 0);
});

test('controller: a task deleted mid-episode has it stopped and recorded, then is released', async () => {
  const t = setup();
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  t.source.delete('default/a');
  await t.settle();
  assert.deepEqual(t.executor.calls.at(-1), { op: 'stop', key: 'default/a', number: 1, reason: 'deleted' });
  assert.equal(t.status('a')?.lastEpisode?.outcome, 'cancelled');
  assert.deepEqual(t.source.released, ['default/a']);
  assert.deepEqual(t.executor.forgotten, ['default/a']);
  assert.equal(t.executor.calls.filter((c) => c.op === 'start').length, 1, 'nothing new starts');
});

test('controller: a task being deleted (finalizer) is released only once its episode ended', async () => {
  const t = setup();
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  t.executor.calls.length = 0;
  const stop = t.executor.stop.bind(t.executor);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  t.executor.stop = async (task, n, reason) => {
    t.executor.calls.push({ op: 'stop', key: task.key, number: n, reason });
    await held; // the pod takes a while to go
    await stop(task, n, reason);
  };
  t.source.set(desired('a', {}, { deleting: true }));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(t.source.released, []);
  release();
  await t.settle();
  assert.deepEqual(t.source.released, ['default/a']);
});

test('controller: shutdown stops running episodes and records them cancelled', async () => {
  const t = setup({ maxConcurrent: 2 });
  t.source.set(desired('a'));
  t.source.set(desired('b'));
  t.controller.start();
  await t.settle();
  t.source.set(desired('c'));
  await t.settle();
  assert.equal(t.status('c')?.reason, 'Queued');
  await t.controller.shutdown();
  assert.equal(t.status('a')?.lastEpisode?.outcome, 'cancelled');
  assert.equal(t.status('b')?.lastEpisode?.outcome, 'cancelled');
  assert.equal(t.executor.runningCount(), 0);
  assert.equal(t.status('c')?.reason, 'ControllerStopped', 'not "Queued": nothing will run it');
});

test('controller: a TerminalError is not retried; any other error is, with backoff', async () => {
  const { TerminalError } = await import('../../controller/core/ports.ts');
  const t = setup();
  let calls = 0;
  let error: Error = new TerminalError('the API server will never accept this');
  t.executor.start = async () => {
    calls++;
    throw error;
  };
  t.controller.start();
  t.source.set(desired('a'));
  await t.settle();
  assert.equal(calls, 1);
  assert.deepEqual(
    t.clock.pending().filter((d) => d < 1000),
    [],
    'no retry scheduled',
  );
  error = new Error('connection reset');
  t.source.set(desired('b'));
  await t.settle();
  assert.equal(calls, 2);
  assert.ok(
    t.clock.pending().some((d) => d < 1000),
    'a retry with backoff is scheduled',
  );
});

test('controller: each finished episode is recorded once, in order, before the status that records it; never a running one', async () => {
  const t = setup();
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  assert.equal(t.sink.records.length, 0, 'episode 1 runs: nothing to record yet');
  t.executor.finish('default/a', {
    exitCode: 1,
    costUSD: 0.1,
    message: 'tests failed',
    tokens: { input: 7 },
    evidence: { errorFingerprint: 'tests failed' },
  });
  await t.settle();
  t.clock.advance(Date.parse(t.status('a')!.nextEpisodeAt!) - t.clock.now().getTime());
  await t.settle();
  assert.equal(t.executor.running.get('default/a')?.number, 2);
  t.executor.finish('default/a', {
    exitCode: 0,
    completion: 'promise',
    costUSD: 0.2,
    evidence: { workspace: { kind: 'git', changed: true, headAfter: 'c0ffee' } },
  });
  await t.settle();
  assert.equal(t.status('a')?.phase, 'Succeeded');
  await t.settle(); // more passes over the finished task record nothing more

  assert.deepEqual(
    t.sink.records.map((r) => [r.record.number, r.record.outcome, r.record.reason]),
    [
      [1, 'failed', 'Backoff'],
      [2, 'succeeded', 'PromiseDetected'],
    ],
  );
  for (const { record, status } of t.sink.records)
    assert.equal(
      status?.currentEpisode?.number,
      record.number,
      'on record the episode still ran: its status comes after',
    );
  const [first, second] = t.sink.records.map((r) => r.record);
  assert.deepEqual(
    [first.exitCode, first.costUSD, first.tokens.input, first.evidence?.errorFingerprint, first.message],
    [1, 0.1, 7, 'tests failed', 'tests failed'],
  );
  assert.equal(first.startedAt, t.sink.records[0].status?.currentEpisode?.startedAt);
  assert.deepEqual([second.completion, second.evidence?.workspace?.headAfter, second.task], ['promise', 'c0ffee', 'a']);
});

test('controller: cancelled and interrupted episodes are recorded too; a deleted task’s records are forgotten on release', async () => {
  const t = setup();
  const { emptyStatus } = await import('../../controller/api/agent-task.ts');
  // Episode 3 on record, but nothing runs it: a controller died mid-episode.
  t.sink.statuses.set('default/a', {
    ...emptyStatus(),
    phase: 'Running',
    episodes: 3,
    currentEpisode: { number: 3, startedAt: t.clock.now().toISOString() },
    observedGeneration: 1,
  });
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  assert.equal(t.executor.running.get('default/a')?.number, 4);
  t.source.delete('default/a');
  await t.settle();
  assert.deepEqual(
    t.sink.records.map((r) => [r.record.number, r.record.outcome, r.record.exitCode]),
    [
      [3, 'interrupted', null],
      [4, 'cancelled', null],
    ],
  );
  assert.deepEqual(t.sink.forgotten, ['default/a']);
  assert.deepEqual(t.source.released, ['default/a']);
});
