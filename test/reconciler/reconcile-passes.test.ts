// reconcile() over more than one pass, and its shape: suspend, delete, deadline, requeue, events, conditions, purity.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import { backoffMs } from '../../controller/reconciler/backoff.ts';
import { findCycle } from '../../controller/reconciler/dependencies.ts';
import { NOW, finishing, input, observing, spec } from './reconcile-facts.ts';

test('reconcile: suspend mid-episode stops it, then records cancelled without counting', () => {
  const running = input({
    spec: spec({ suspend: true }),
    status: {
      ...emptyStatus(),
      observedGeneration: 1,
      phase: 'Running',
      episodes: 2,
      currentEpisode: { number: 2, startedAt: NOW.toISOString() },
    },
  });
  const first = reconcile(running);
  assert.deepEqual(
    first.actions.find((a) => a.type === 'StopEpisode'),
    { type: 'StopEpisode', number: 2, reason: 'cancelled' },
  );
  const second = reconcile({
    ...running,
    status: first.status,
    episode: { number: 2, state: 'finished', result: episodeResult({ exitCode: null, cancelled: true }) },
  });
  assert.equal(second.status.phase, 'Suspended');
  assert.equal(second.status.lastEpisode?.outcome, 'cancelled');
  assert.equal(second.status.consecutiveFailures, 0);
  assert.equal(second.status.currentEpisode, undefined);
});

test('reconcile: deleted task stops its episode and starts nothing; the episode is recorded as cancelled for that', () => {
  const out = reconcile(
    input({
      deleted: true,
      status: {
        ...emptyStatus(),
        observedGeneration: 1,
        phase: 'Running',
        episodes: 1,
        currentEpisode: { number: 1, startedAt: NOW.toISOString() },
      },
    }),
  );
  assert.deepEqual(out.actions, [{ type: 'StopEpisode', number: 1, reason: 'deleted' }]);
  const ended = reconcile(
    observing(
      { state: 'finished', result: episodeResult({ exitCode: null, cancelled: true }) },
      { deleted: true, stopRequested: { number: 1, reason: 'deleted' } },
    ),
  );
  assert.deepEqual(
    [ended.status.lastEpisode?.outcome, ended.status.lastEpisode?.message],
    ['cancelled', 'episode cancelled: spec deleted'],
  );
  assert.ok(!ended.actions.some((a) => a.type === 'StartEpisode'), JSON.stringify(ended.actions));
});

test('reconcile: an episode that ended before its spec was deleted (a restart read it) keeps its end, noting the deletion', () => {
  const result = episodeResult({ exitCode: 0, costUSD: 0.7, message: 'all done' });
  const out = reconcile(observing({ state: 'finished', result }, { deleted: true, spec: undefined }));
  assert.deepEqual(
    [out.status.lastEpisode?.outcome, out.status.lastEpisode?.message, out.status.costUSD],
    ['continue', 'all done; spec deleted before its end was recorded', 0.7],
  );
  assert.deepEqual(
    out.actions.map((a) => a.type),
    ['RecordEpisode', 'RecordEvent', 'ReleaseTask'],
    JSON.stringify(out.actions),
  );
});

test('reconcile: a running episode past its deadline is stopped as timeout', () => {
  const out = reconcile(
    input({
      spec: spec({ limits: { episodeTimeoutSeconds: 60 } }),
      status: {
        ...emptyStatus(),
        observedGeneration: 1,
        phase: 'Running',
        episodes: 1,
        currentEpisode: { number: 1, startedAt: '2026-11-22T11:58:00.000Z' },
      },
    }),
  );
  assert.deepEqual(out.actions, [{ type: 'StopEpisode', number: 1, reason: 'timeout' }]);
});

test('reconcile: requeue-after points at the end of the backoff', () => {
  const out = reconcile(input(finishing({ exitCode: 1 })));
  assert.equal(out.requeueAfterMs, 7500);
});

test('reconcile: events name what happened', () => {
  const out = reconcile(input(finishing({ exitCode: 2, message: 'boom' }, { consecutiveFailures: 2 }, 3)));
  const reasons = out.actions.filter((a) => a.type === 'RecordEvent').map((a) => a.type === 'RecordEvent' && a.reason);
  assert.deepEqual(reasons, ['EpisodeFailed', 'TaskSkipped']);
});

test('reconcile: conditions follow the phase and keep transition times', () => {
  const first = reconcile(input(finishing({ exitCode: 0, completion: 'promise' })));
  const ready = first.status.conditions.find((c) => c.type === 'Ready');
  assert.equal(ready?.status, 'True');
  const later = reconcile(input({ status: first.status, now: new Date(NOW.getTime() + 60_000) }));
  assert.equal(later.status.conditions.find((c) => c.type === 'Ready')?.lastTransitionTime, ready?.lastTransitionTime);
});

test('reconcile is pure: same input, same output, input untouched', () => {
  const i = input(finishing({ exitCode: 1 }));
  const frozen = structuredClone(i);
  assert.deepEqual(reconcile(i), reconcile(i));
  assert.deepEqual(i, frozen);
});

test('backoff: exponential, capped, jittered within [d/2, d]', () => {
  const b = { initialSeconds: 10, factor: 2, maxSeconds: 60 };
  assert.equal(backoffMs(b, 1, 0), 5000);
  assert.equal(backoffMs(b, 1, 0.999999), 10000);
  assert.equal(backoffMs(b, 3, 1), 40000);
  assert.equal(backoffMs(b, 10, 1), 60000);
});

test('findCycle finds cycles through the start node only', () => {
  assert.deepEqual(findCycle('a', { a: ['b'], b: ['c'], c: ['a'] }), ['a', 'b', 'c', 'a']);
  assert.equal(findCycle('x', { x: ['a'], a: ['b'], b: ['a'] }), undefined);
  assert.deepEqual(findCycle('s', { s: ['s'] }), ['s', 's']);
  assert.equal(findCycle('a', { a: ['b', 'c'], b: ['c'], c: [] }), undefined);
});
