// Observations that used to be decided outside reconcile(): stops, vanished episodes, unschedulable pods.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import { NOW, finishing, input, observing, spec } from './reconcile-facts.ts';

const observationCases: Array<{
  name: string;
  in: ReconcileInput;
  phase: string;
  reason: string;
  outcome?: string;
  message?: RegExp;
}> = [
  {
    name: 'a stop we asked for as timeout is recorded as timeout, whatever the process said',
    in: observing(
      { state: 'finished', result: episodeResult({ exitCode: null, cancelled: true, costUSD: 0.5 }) },
      { stopRequested: { number: 1, reason: 'timeout' } },
    ),
    phase: 'Waiting',
    reason: 'Backoff',
    outcome: 'timeout',
  },
  {
    name: 'a stop we asked for as cancel is recorded as cancelled even if the agent exited 0 meanwhile',
    in: observing(
      { state: 'finished', result: episodeResult({ exitCode: 0, completion: 'promise' }) },
      { stopRequested: { number: 1, reason: 'cancelled' } },
    ),
    phase: 'Running', // not counted: the next episode starts at once
    reason: 'EpisodeRunning',
    outcome: 'cancelled',
  },
  {
    name: 'an episode gone after our stop ends as that stop',
    in: observing({ state: 'gone', removedBy: 'controller' }, { stopRequested: { number: 1, reason: 'timeout' } }),
    phase: 'Waiting',
    reason: 'Backoff',
    outcome: 'timeout',
  },
  {
    name: 'an episode removed by someone else is transient (retried, not counted)',
    in: observing({ state: 'gone', removedBy: 'someone-else' }),
    phase: 'Waiting',
    reason: 'Backoff',
    outcome: 'transient',
    message: /deleted by someone else/,
  },
  {
    name: 'an episode on record that never started is interrupted',
    in: observing({ state: 'gone' }),
    phase: 'Running',
    reason: 'EpisodeRunning',
    outcome: 'interrupted',
    message: /never started/,
  },
  {
    name: 'an episode an earlier controller stopped is interrupted',
    in: observing({ state: 'gone', removedBy: 'controller' }),
    phase: 'Running',
    reason: 'EpisodeRunning',
    outcome: 'interrupted',
  },
  {
    name: 'an unschedulable episode waits with the scheduler message',
    in: observing({ unschedulable: 'episode pod cannot be scheduled: 0/3 nodes' }),
    phase: 'Waiting',
    reason: 'Unschedulable',
    message: /0\/3 nodes/,
  },
];

for (const c of observationCases) {
  test(`reconcile: ${c.name}`, () => {
    const out = reconcile(c.in);
    assert.equal(out.status.phase, c.phase);
    assert.equal(out.status.reason, c.reason);
    if (c.outcome) {
      assert.equal(out.status.lastEpisode?.outcome, c.outcome);
      assert.equal(out.status.lastEpisode?.number, 1);
      assert.notEqual(out.status.currentEpisode?.number, 1);
    }
    if (c.message) assert.match(out.status.lastEpisode?.message ?? out.status.message ?? '', c.message);
    assert.equal(out.status.consecutiveFailures, c.outcome === 'timeout' ? 1 : 0);
  });
}

test('reconcile: a stopped episode keeps the cost it reported', () => {
  const out = reconcile(
    observing(
      { state: 'finished', result: episodeResult({ exitCode: null, costUSD: 0.75 }) },
      { stopRequested: { number: 1, reason: 'cancelled' } },
    ),
  );
  assert.equal(out.status.costUSD, 0.75);
});

test('reconcile: an unschedulable episode is never timed out, and its clock starts when it really starts', () => {
  const long = {
    ...finishing({ exitCode: 0 }).status!,
    currentEpisode: { number: 1, startedAt: '2026-11-22T09:00:00.000Z' },
  };
  const waiting = reconcile(
    input({
      spec: spec({ limits: { episodeTimeoutSeconds: 60 } }),
      status: long,
      episode: { number: 1, state: 'running', unschedulable: 'no nodes' },
    }),
  );
  assert.equal(waiting.actions.filter((a) => a.type === 'StopEpisode').length, 0);
  const runningSince = new Date(NOW.getTime() - 10_000).toISOString();
  const running = reconcile(
    input({
      spec: spec({ limits: { episodeTimeoutSeconds: 60 } }),
      status: long,
      episode: { number: 1, state: 'running', startedAt: runningSince },
    }),
  );
  assert.equal(running.status.phase, 'Running');
  assert.equal(running.actions.filter((a) => a.type === 'StopEpisode').length, 0);
  assert.equal(running.requeueAfterMs, 50_000 + 30_000);
});

test('reconcile: the observed pod name goes into currentEpisode', () => {
  const out = reconcile(observing({ podName: 't-ep-1' }));
  assert.equal(out.status.currentEpisode?.podName, 't-ep-1');
});

test('reconcile: a task without a valid spec still records its episode with the schema defaults', () => {
  const out = reconcile(input({ ...finishing({ exitCode: 1 }), spec: undefined, specError: 'bad' }));
  assert.equal(out.status.lastEpisode?.outcome, 'failed');
  assert.equal(out.status.phase, 'Failed');
});
