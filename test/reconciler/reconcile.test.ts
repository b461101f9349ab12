// Table tests for every rule of the pure reconciler: the case table (one pass, one status).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import { backoffMs } from '../../controller/reconciler/backoff.ts';
import { NOW, dep, finishing, input, spec } from './reconcile-facts.ts';

const cases: Array<{
  name: string;
  in: Partial<ReconcileInput>;
  phase: string;
  reason?: string;
  start?: number;
  check?: (s: AgentTaskStatus) => void;
}> = [
  { name: 'new task starts episode 1', in: {}, phase: 'Running', reason: 'EpisodeRunning', start: 1 },
  { name: 'no capacity queues', in: { freeSlots: 0 }, phase: 'Pending', reason: 'Queued' },
  {
    name: 'promise → Succeeded',
    in: finishing({ exitCode: 0, completion: 'promise', costUSD: 0.25 }),
    phase: 'Succeeded',
    reason: 'PromiseDetected',
    check: (s) => {
      assert.equal(s.costUSD, 0.25);
      assert.equal(s.lastEpisode?.outcome, 'succeeded');
      assert.equal(s.currentEpisode, undefined);
    },
  },
  {
    name: 'RALPH_STATUS exit signal → Succeeded',
    in: finishing({ exitCode: 0, completion: 'exitSignal' }),
    phase: 'Succeeded',
    reason: 'ExitSignalDetected',
  },
  {
    name: 'onExitZero → Succeeded',
    in: { ...finishing({ exitCode: 0 }), spec: spec({ completion: { onExitZero: true } }) },
    phase: 'Succeeded',
    reason: 'ExitedZero',
  },
  {
    name: 'verify fails → failed episode',
    in: {
      ...finishing({ exitCode: 0, completion: 'promise', verifyExitCode: 1 }),
      spec: spec({ completion: { verify: ['npm', 'test'] } }),
    },
    phase: 'Waiting',
    reason: 'Backoff',
    check: (s) => {
      assert.equal(s.consecutiveFailures, 1);
      assert.equal(s.lastEpisode?.outcome, 'failed');
    },
  },
  {
    name: 'verify passes → Succeeded',
    in: {
      ...finishing({ exitCode: 0, completion: 'promise', verifyExitCode: 0 }),
      spec: spec({ completion: { verify: ['true'] } }),
    },
    phase: 'Succeeded',
  },
  {
    name: 'exit 0 without signal → next episode at once, failures reset',
    in: finishing({ exitCode: 0 }, { consecutiveFailures: 2 }),
    phase: 'Running',
    start: 2,
    check: (s) => {
      assert.equal(s.consecutiveFailures, 0);
      assert.equal(s.lastEpisode?.outcome, 'continue');
    },
  },
  {
    name: 'failure → Waiting with backoff',
    in: finishing({ exitCode: 1 }),
    phase: 'Waiting',
    reason: 'Backoff',
    check: (s) => {
      assert.equal(s.consecutiveFailures, 1);
      // 10 s initial, equal jitter 0.5 → 7.5 s
      assert.equal(Date.parse(s.nextEpisodeAt as string) - NOW.getTime(), 7500);
    },
  },
  {
    name: 'third consecutive failure → Skipped',
    in: finishing({ exitCode: 2 }, { consecutiveFailures: 2 }, 3),
    phase: 'Skipped',
    reason: 'ConsecutiveFailures',
  },
  {
    name: 'maxConsecutiveFailures is honoured',
    in: {
      ...finishing({ exitCode: 2 }, { consecutiveFailures: 2 }, 3),
      spec: spec({ limits: { maxConsecutiveFailures: 5 } }),
    },
    phase: 'Waiting',
  },
  {
    name: 'is_error with exit 0 is a failure',
    in: finishing({ exitCode: 0, agentError: true, completion: 'promise' }),
    phase: 'Waiting',
    check: (s) => assert.equal(s.lastEpisode?.outcome, 'failed'),
  },
  {
    name: 'timeout counts as failure',
    in: finishing({ exitCode: null, timedOut: true }, { consecutiveFailures: 2 }, 3),
    phase: 'Skipped',
    check: (s) => assert.equal(s.lastEpisode?.outcome, 'timeout'),
  },
  {
    name: 'transient → retries+1, not a failure',
    in: finishing({ exitCode: 1, errorClass: 'transient' }, { consecutiveFailures: 2 }, 3),
    phase: 'Waiting',
    reason: 'Backoff',
    check: (s) => {
      assert.equal(s.retries, 1);
      assert.equal(s.consecutiveFailures, 2);
      assert.equal(s.consecutiveRetries, 1);
    },
  },
  {
    name: 'transient backoff grows with consecutive retries',
    in: finishing({ exitCode: 1, errorClass: 'transient' }, { consecutiveRetries: 3, retries: 3 }, 4),
    phase: 'Waiting',
    check: (s) =>
      assert.equal(
        Date.parse(s.nextEpisodeAt as string) - NOW.getTime(),
        backoffMs({ initialSeconds: 10, factor: 2, maxSeconds: 600 }, 4, 0.5),
      ),
  },
  {
    name: 'usage limit waits until the reset time',
    in: finishing({ exitCode: 1, errorClass: 'usageLimit', resetAt: '2026-11-22T15:00:00.000Z' }),
    phase: 'Waiting',
    reason: 'UsageLimit',
    check: (s) => {
      assert.equal(s.nextEpisodeAt, '2026-11-22T15:00:00.000Z');
      assert.equal(s.retries, 1);
      assert.equal(s.consecutiveFailures, 0);
    },
  },
  {
    name: 'usage limit whose reset passed while the episode ended retries after 5 s, not the hour',
    in: finishing({ exitCode: 1, errorClass: 'usageLimit', resetAt: '2026-11-22T11:59:58.000Z' }),
    phase: 'Waiting',
    check: (s) => assert.equal(s.nextEpisodeAt, '2026-11-22T12:00:05.000Z'),
  },
  {
    name: 'usage limit with a reset older than the fallback window waits 1 h',
    in: finishing({ exitCode: 1, errorClass: 'usageLimit', resetAt: '2026-11-22T10:00:00.000Z' }),
    phase: 'Waiting',
    check: (s) => assert.equal(s.nextEpisodeAt, '2026-11-22T13:00:00.000Z'),
  },
  {
    name: 'usage limit without reset time waits 1 h',
    in: finishing({ exitCode: 1, errorClass: 'usageLimit' }),
    phase: 'Waiting',
    check: (s) => assert.equal(s.nextEpisodeAt, '2026-11-22T13:00:00.000Z'),
  },
  {
    name: 'fatal → Failed at once',
    in: finishing({ exitCode: 1, errorClass: 'fatal', message: 'Invalid API key' }),
    phase: 'Failed',
    reason: 'FatalError',
  },
  {
    name: 'context too long → Failed at once by default, failed (backoff) when the spec says so',
    in: finishing({ exitCode: 1, errorClass: 'contextTooLong', message: 'Prompt is too long' }),
    phase: 'Failed',
    reason: 'ContextTooLong',
    check: (s) => {
      assert.equal(s.lastEpisode?.outcome, 'fatal');
      const counted = reconcile(
        input({
          ...finishing({ exitCode: 1, errorClass: 'contextTooLong' }),
          spec: spec({ completion: { contextTooLong: 'failed' } }),
        }),
      ).status;
      assert.equal(counted.phase, 'Waiting');
      assert.equal(counted.lastEpisode?.outcome, 'failed');
      assert.equal(counted.consecutiveFailures, 1);
    },
  },
  {
    name: 'interrupted → retried at once, not counted',
    in: finishing({ exitCode: null, interrupted: true }, { consecutiveFailures: 1 }),
    phase: 'Running',
    start: 2,
    check: (s) => {
      assert.equal(s.consecutiveFailures, 1);
      assert.equal(s.lastEpisode?.outcome, 'interrupted');
    },
  },
  {
    name: 'cost cap → NeedsReview, no start',
    in: { ...finishing({ exitCode: 0, costUSD: 2 }, { costUSD: 3.5 }), spec: spec({ limits: { maxCostUSD: 5 } }) },
    phase: 'NeedsReview',
    reason: 'BudgetExceeded',
  },
  {
    name: 'token cap → NeedsReview',
    in: {
      ...finishing({ exitCode: 0, tokens: { input: 600, output: 500 } }),
      spec: spec({ limits: { maxTokens: 1000 } }),
    },
    phase: 'NeedsReview',
    reason: 'BudgetExceeded',
  },
  {
    name: 'global budget → NeedsReview',
    in: {
      ...finishing({ exitCode: 0, costUSD: 0.3 }, { costUSD: 0.2 }),
      globalBudget: { limitUSD: 1, othersSpentUSD: 0.5 },
    },
    phase: 'NeedsReview',
    reason: 'GlobalBudgetExceeded',
  },
  {
    name: 'maxEpisodes reached → NeedsReview',
    in: finishing({ exitCode: 0 }, {}, 20),
    phase: 'NeedsReview',
    reason: 'MaxEpisodesReached',
  },
  {
    name: 'transient retries and usage limits do not spend maxEpisodes (an outage never ends a task)',
    in: finishing({ exitCode: 0 }, { retries: 5 }, 20),
    phase: 'Running',
    start: 21,
    check: () => {
      const spent = reconcile(input(finishing({ exitCode: 0 }, { retries: 4 }, 24))).status;
      assert.equal(spent.reason, 'MaxEpisodesReached');
      assert.match(spent.message ?? '', /^20 episodes without finishing the task/);
    },
  },
  {
    name: 'a tiny episode cost is kept in the sum; float noise is not',
    in: finishing({ exitCode: 0, costUSD: 0.0000004 }, { costUSD: 0.1 }),
    phase: 'Running',
    start: 2,
    check: (s) => {
      assert.equal(s.costUSD, 0.1000004);
      assert.equal(reconcile(input(finishing({ exitCode: 0, costUSD: 0.2 }, { costUSD: 0.1 }))).status.costUSD, 0.3);
    },
  },
  {
    name: 'success on the last allowed episode still succeeds',
    in: finishing({ exitCode: 0, completion: 'promise' }, {}, 20),
    phase: 'Succeeded',
  },
  {
    name: 'backoff not over → Waiting with requeue',
    in: {
      status: {
        ...emptyStatus(),
        observedGeneration: 1,
        phase: 'Waiting',
        reason: 'Backoff',
        episodes: 1,
        nextEpisodeAt: '2026-11-22T12:00:05.000Z',
      },
    },
    phase: 'Waiting',
  },
  {
    name: 'backoff over → next episode',
    in: {
      status: {
        ...emptyStatus(),
        observedGeneration: 1,
        phase: 'Waiting',
        episodes: 1,
        nextEpisodeAt: '2026-11-22T11:59:59.000Z',
      },
    },
    phase: 'Running',
    start: 2,
  },
  {
    name: 'dependencies pending',
    in: { spec: spec({ dependsOn: ['a', 'b'] }), dependencies: { a: dep('Succeeded'), b: dep('Running') } },
    phase: 'Waiting',
    reason: 'DependenciesPending',
  },
  {
    name: 'missing dependency waits',
    in: { spec: spec({ dependsOn: ['a'] }) },
    phase: 'Waiting',
    reason: 'DependenciesPending',
  },
  {
    name: 'dependencies done → start',
    in: { spec: spec({ dependsOn: ['a'] }), dependencies: { a: dep('Succeeded') } },
    phase: 'Running',
    start: 1,
  },
  {
    name: 'dependency failed → Skipped',
    in: { spec: spec({ dependsOn: ['a'] }), dependencies: { a: dep('NeedsReview') } },
    phase: 'Skipped',
    reason: 'DependencyFailed',
  },
  {
    name: 'dependency cycle → Failed',
    in: { spec: spec({ dependsOn: ['a'] }), dependencyCycle: ['t', 'a', 't'] },
    phase: 'Failed',
    reason: 'InvalidSpec',
  },
  {
    name: 'invalid spec → Failed',
    in: { spec: undefined, specError: 'spec.agent.command: Required' },
    phase: 'Failed',
    reason: 'InvalidSpec',
  },
  { name: 'suspended → no start', in: { spec: spec({ suspend: true }) }, phase: 'Suspended', reason: 'Suspended' },
  {
    name: 'finished task stays finished',
    in: { status: { ...emptyStatus(), observedGeneration: 1, phase: 'Succeeded', episodes: 3 } },
    phase: 'Succeeded',
  },
  {
    name: 'spec edit re-opens a finished task; caps stay cumulative, evidence streaks start over',
    in: {
      generation: 2,
      status: {
        ...emptyStatus(),
        observedGeneration: 1,
        phase: 'Skipped',
        episodes: 3,
        consecutiveFailures: 3,
        costUSD: 1,
        testOnlyEpisodes: 2,
      },
    },
    phase: 'Running',
    start: 4,
    check: (s) => {
      assert.equal(s.consecutiveFailures, 0);
      assert.equal(s.testOnlyEpisodes, undefined);
      assert.equal(s.costUSD, 1);
      assert.equal(s.observedGeneration, 2);
    },
  },
  {
    name: 'a running episode unknown to status is adopted, not duplicated',
    in: {
      status: { ...emptyStatus(), observedGeneration: 1, episodes: 4, lastEpisode: { number: 4, outcome: 'failed' } },
      episode: { number: 5, state: 'running', startedAt: NOW.toISOString() },
    },
    phase: 'Running',
    check: (s) => {
      assert.equal(s.episodes, 5);
      assert.equal(s.currentEpisode?.number, 5);
    },
  },
  {
    name: 'a result already recorded is not counted twice',
    in: {
      status: {
        ...emptyStatus(),
        observedGeneration: 1,
        phase: 'Waiting',
        episodes: 1,
        consecutiveFailures: 1,
        nextEpisodeAt: '2026-11-22T12:00:05.000Z',
        lastEpisode: { number: 1, outcome: 'failed' },
      },
      episode: { number: 1, state: 'finished', result: episodeResult({ exitCode: 1 }) },
    },
    phase: 'Waiting',
    check: (s) => assert.equal(s.consecutiveFailures, 1),
  },
];

for (const c of cases) {
  test(`reconcile: ${c.name}`, () => {
    const out = reconcile(input(c.in));
    assert.equal(out.status.phase, c.phase, `phase (message: ${out.status.message})`);
    if (c.reason) assert.equal(out.status.reason, c.reason);
    const starts = out.actions.filter((a) => a.type === 'StartEpisode');
    if (c.start) {
      assert.deepEqual(starts, [{ type: 'StartEpisode', number: c.start }]);
      assert.equal(out.status.episodes, c.start);
      assert.equal(out.status.currentEpisode?.number, c.start);
    } else {
      assert.deepEqual(starts, [], 'no episode may start');
    }
    c.check?.(out.status);
  });
}
