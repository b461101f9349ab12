// record-episode.ts's outcome table (issue 27 §3): one row per outcome, each table-tested here for the phase,
// reason, counters and events it writes; every outcome has a row.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus, Outcome, Phase } from '../../controller/api/agent-task.ts';
import { OUTCOMES } from '../../controller/api/agent-task-status.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import type { Events } from '../../controller/reconciler/actions.ts';
import type { JudgedEpisode } from '../../controller/reconciler/completion.ts';
import { OUTCOME_RULES } from '../../controller/reconciler/outcome-rules.ts';

const NOW = new Date('2026-11-22T12:00:00.000Z');
const spec = AgentTaskSpecSchema.parse({
  prompt: 'p',
  agent: { command: ['a'] },
  backoff: { initialSeconds: 10, factor: 2, maxSeconds: 600 },
  limits: { maxConsecutiveFailures: 3 },
});

function apply(judged: JudgedEpisode, result: EpisodeResultInput, prevOver: Partial<AgentTaskStatus> = {}) {
  const prev: AgentTaskStatus = { ...emptyStatus(), episodes: 2, consecutiveFailures: 1, retries: 4, ...prevOver };
  const status: AgentTaskStatus = { ...prev, lastEpisode: { number: 2, outcome: judged.outcome } as never };
  const events: Events = [];
  const setPhase = (phase: Phase, why: string, message: string) =>
    Object.assign(status, { phase, reason: why, message });
  const input = { namespace: 'd', name: 't', generation: 1, spec, status: prev, dependencies: {}, freeSlots: 1 };
  OUTCOME_RULES[judged.outcome]({
    prev,
    status,
    events,
    result: episodeResult(result),
    judged,
    n: 2,
    detail: result.message ? `: ${result.message}` : '',
    setPhase,
    input: { ...input, now: NOW, jitter: 0 },
    completion: spec.completion,
  });
  return { status, events: events.map((e) => e.reason) };
}

const rows: Array<{
  judged: JudgedEpisode;
  result?: EpisodeResultInput;
  prev?: Partial<AgentTaskStatus>;
  phase: Phase | undefined;
  reason?: string;
  events: string[];
  check?: (s: AgentTaskStatus) => void;
}> = [
  {
    judged: { outcome: 'succeeded', reason: 'ExitSignal' },
    phase: 'Succeeded',
    reason: 'ExitSignal',
    events: ['EpisodeSucceeded'],
    check: (s) => assert.equal(s.consecutiveFailures, 0),
  },
  {
    judged: { outcome: 'continue', reason: 'ExitZero' },
    phase: 'Pending',
    reason: 'EpisodeFinished',
    events: ['EpisodeFinished'],
  },
  {
    judged: { outcome: 'continue', reason: 'MissingEvidence', missing: 'verify' },
    result: { exitCode: 0, message: 'done' },
    phase: 'Pending',
    reason: 'MissingEvidence',
    events: ['CompletionRejected'],
    check: (s) =>
      assert.equal(s.lastEpisode?.message, 'completion claimed without evidence: missing verify (agent: done)'),
  },
  {
    judged: { outcome: 'failed', reason: 'ExitCode' },
    phase: 'Waiting',
    reason: 'Backoff',
    events: ['EpisodeFailed'],
    check: (s) => {
      assert.equal(s.consecutiveFailures, 2);
      assert.equal(s.nextEpisodeAt, '2026-11-22T12:00:10.000Z');
    },
  },
  {
    judged: { outcome: 'timeout', reason: 'Timeout' },
    prev: { consecutiveFailures: 2 },
    phase: 'Skipped',
    reason: 'ConsecutiveFailures',
    events: ['EpisodeFailed', 'TaskSkipped'],
  },
  {
    judged: { outcome: 'transient', reason: 'Transient' },
    phase: 'Waiting',
    reason: 'Backoff',
    events: ['EpisodeRetrying'],
    check: (s) => assert.deepEqual([s.retries, s.consecutiveRetries], [5, 1]),
  },
  {
    judged: { outcome: 'usageLimit', reason: 'UsageLimit' },
    result: { exitCode: 1, resetAt: '2026-11-22T13:00:00.000Z' },
    phase: 'Waiting',
    reason: 'UsageLimit',
    events: ['UsageLimit'],
    check: (s) => assert.equal(s.retries, 5),
  },
  {
    judged: { outcome: 'fatal', reason: 'AgentMissing' },
    phase: 'Failed',
    reason: 'AgentMissing',
    events: ['TaskFailed'],
  },
  {
    judged: { outcome: 'interrupted', reason: 'Interrupted' },
    phase: 'Pending',
    reason: 'Interrupted',
    events: ['EpisodeInterrupted'],
  },
  {
    judged: { outcome: 'cancelled', reason: 'Cancelled' },
    phase: 'Pending',
    reason: 'Cancelled',
    events: ['EpisodeCancelled'],
  },
  {
    judged: { outcome: 'cancelled', reason: 'BudgetExceeded' },
    phase: 'Pending',
    reason: 'BudgetExceeded',
    events: ['BudgetExceeded'],
  },
  { judged: { outcome: 'skipped', reason: 'SkipWhen' }, phase: undefined, events: [] },
];

for (const row of rows) {
  test(`outcome row ${row.judged.outcome} (${row.judged.reason}): ${row.phase ?? 'no change'}`, () => {
    const { status, events } = apply(row.judged, row.result ?? { exitCode: 1 }, row.prev);
    assert.equal(status.phase, row.phase);
    if (row.reason) assert.equal(status.reason, row.reason);
    assert.deepEqual(events, row.events);
    row.check?.(status);
  });
}

test('outcome rows: every outcome has one, and the table above tries each', () => {
  assert.deepEqual(Object.keys(OUTCOME_RULES).sort(), [...OUTCOMES].sort());
  assert.deepEqual([...new Set(rows.map((r) => r.judged.outcome))].sort(), [...OUTCOMES].sort() as Outcome[]);
});
