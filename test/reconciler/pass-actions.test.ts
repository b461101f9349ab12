// Table tests of what a pass asks the loop to do, in order: the ended episode's record (and its reason), the
// events with their log fields, the stops, a start and the event that announces it; and a retried start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { endedEpisodeRecord, episodeEnded, observedEpisode } from '../../controller/reconciler/pass-actions.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { Action, ObservedEpisode, ReconcileInput } from '../../controller/reconciler/reconcile.ts';

const NOW = new Date('2026-11-22T12:00:00.000Z');
const STARTED = '2026-11-22T11:59:00.000Z';
const status = (over: Partial<AgentTaskStatus>): AgentTaskStatus => ({
  ...emptyStatus(),
  observedGeneration: 1,
  ...over,
});
const runningEpisode = (n: number) =>
  status({ phase: 'Running', episodes: n, currentEpisode: { number: n, startedAt: STARTED } });
const finished = (n: number, exitCode = 0): ObservedEpisode => ({
  number: n,
  state: 'finished',
  finishedAt: NOW.toISOString(),
  result: episodeResult({ exitCode, costUSD: 0.5 }),
});
const last = (n: number) => ({ lastEpisode: { number: n, outcome: 'continue' as const, exitCode: 0, costUSD: 0.5 } });

const ends: Array<{
  name: string;
  before: AgentTaskStatus;
  episode: ObservedEpisode | undefined;
  after: AgentTaskStatus;
  ended: boolean;
}> = [
  { name: 'nothing observed', before: runningEpisode(1), episode: undefined, after: status({}), ended: false },
  {
    name: 'still running',
    before: runningEpisode(1),
    episode: { number: 1, state: 'running' },
    after: runningEpisode(1),
    ended: false,
  },
  {
    name: 'finished and recorded',
    before: runningEpisode(1),
    episode: finished(1),
    after: status(last(1)),
    ended: true,
  },
  {
    name: 'finished, the next one started at once',
    before: runningEpisode(1),
    episode: finished(1),
    after: { ...runningEpisode(2), ...last(1) },
    ended: true,
  },
  {
    name: 'finished but not recorded yet',
    before: runningEpisode(1),
    episode: finished(1),
    after: runningEpisode(1),
    ended: false,
  },
  {
    name: 'an episode the status never had running (adopted and recorded at once)',
    before: status({}),
    episode: finished(1),
    after: status(last(1)),
    ended: false,
  },
  { name: 'an older episode', before: runningEpisode(2), episode: finished(1), after: status({}), ended: false },
];

for (const c of ends) {
  test(`episode ended: ${c.name} → ${c.ended}`, () => {
    assert.equal(episodeEnded(c.before, c.episode, c.after), c.ended);
  });
}

const records: Array<{
  name: string;
  after: AgentTaskStatus;
  endReason?: string;
  reason: string | undefined;
  recorded: boolean;
}> = [
  {
    name: "a budget held the task in the same pass: the reason its end was judged by, not the hold's",
    after: status({ ...last(1), phase: 'Waiting', reason: 'BudgetWindow' }),
    endReason: 'BudgetExceeded',
    reason: 'BudgetExceeded',
    recorded: true,
  },
  {
    name: 'the task waits: the status reason',
    after: status({ ...last(1), phase: 'Waiting', reason: 'Backoff' }),
    reason: 'Backoff',
    recorded: true,
  },
  {
    name: 'the task finished: the status reason',
    after: status({ ...last(1), phase: 'Succeeded', reason: 'PromiseDetected' }),
    reason: 'PromiseDetected',
    recorded: true,
  },
  {
    name: 'the next episode started at once: no reason (the status reason is about that one)',
    after: { ...runningEpisode(2), ...last(1), reason: 'EpisodeRunning' },
    reason: undefined,
    recorded: true,
  },
  {
    name: 'the status does not record it: nothing',
    after: status({ reason: 'Backoff' }),
    reason: undefined,
    recorded: false,
  },
];

for (const c of records) {
  test(`ended episode record: ${c.name}`, () => {
    const record = endedEpisodeRecord('t', finished(1), c.after, c.endReason);
    assert.equal(record !== undefined, c.recorded);
    assert.equal(record?.reason, c.reason);
    if (record) assert.deepEqual([record.task, record.number, record.costUSD], ['t', 1, 0.5]);
  });
}

test('observed episode: a start being retried has not vanished; anything else is as the executor saw it', () => {
  const gone = (removedBy?: 'controller' | 'someone-else'): ObservedEpisode => ({
    number: 2,
    state: 'gone',
    removedBy,
  });
  assert.equal(observedEpisode(gone(), 2), undefined);
  assert.deepEqual(observedEpisode(gone(), 3), gone());
  assert.deepEqual(observedEpisode(gone(), undefined), gone());
  assert.deepEqual(observedEpisode(gone('someone-else'), 2), gone('someone-else'));
  assert.deepEqual(observedEpisode(finished(2), 2), finished(2));
});

function input(over: Partial<ReconcileInput>): ReconcileInput {
  return {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['a'] }, limits: { episodeTimeoutSeconds: 60 } }),
    status: status({}),
    dependencies: {},
    freeSlots: 1,
    now: NOW,
    jitter: 0.5,
    ...over,
  };
}

/** An action as one short word, in order: what the loop does. */
function steps(actions: Action[]): string[] {
  return actions.map((a) => {
    if (a.type === 'RecordEvent') return `event ${a.reason}${a.afterStart ? ' (after start)' : ''}`;
    if (a.type === 'RecordEpisode') return `record ${a.record.number} (${a.record.reason ?? 'no reason'})`;
    if (a.type === 'ApplyOps') return `ApplyOps ${a.episode}`;
    if (a.type === 'CreateTasks') return `CreateTasks ${a.tasks.length}`;
    if (a.type === 'AdoptWinner') return `AdoptWinner ${a.winner}`;
    if (a.type === 'ReleaseTask') return 'ReleaseTask';
    return `${a.type} ${a.number}`;
  });
}

const orders: Array<{ name: string; in: Partial<ReconcileInput>; steps: string[] }> = [
  { name: 'a new task', in: {}, steps: ['StartEpisode 1', 'event EpisodeStarted (after start)'] },
  {
    name: 'an episode made progress, the next starts at once',
    in: { status: runningEpisode(1), episode: finished(1) },
    steps: ['record 1 (no reason)', 'event EpisodeFinished', 'StartEpisode 2', 'event EpisodeStarted (after start)'],
  },
  {
    name: 'an episode failed: backoff',
    in: { status: runningEpisode(1), episode: finished(1, 1) },
    steps: ['record 1 (Backoff)', 'event EpisodeFailed'],
  },
  {
    name: 'events before stops',
    in: {
      status: runningEpisode(1),
      now: new Date(NOW.getTime() + 120_000),
      resumeRequest: { token: 'r1', by: 'ann' },
    },
    steps: ['event ResumeIgnored', 'StopEpisode 1'],
  },
  {
    name: 'a start that threw is started again, never renumbered, and announced only once',
    in: { status: runningEpisode(2), episode: { number: 2, state: 'gone' }, startToRetry: 2 },
    steps: ['StartEpisode 2'],
  },
  {
    name: 'a retried start whose episode someone removed is recorded instead',
    in: {
      status: runningEpisode(2),
      episode: { number: 2, state: 'gone', removedBy: 'someone-else' },
      startToRetry: 2,
    },
    steps: ['record 2 (Backoff)', 'event EpisodeRetrying'],
  },
  { name: 'a deleted task with nothing running is released', in: { deleted: true }, steps: ['ReleaseTask'] },
  {
    name: 'a deleted task whose episode runs: stopped, not released yet',
    in: { deleted: true, status: runningEpisode(1), episode: { number: 1, state: 'running' } },
    steps: ['StopEpisode 1'],
  },
  {
    name: 'a deleted task whose stopped episode ended: recorded, then released',
    in: {
      deleted: true,
      status: runningEpisode(1),
      episode: finished(1),
      stopRequested: { number: 1, reason: 'deleted' },
    },
    steps: ['record 1 (Cancelled)', 'event EpisodeCancelled', 'ReleaseTask'],
  },
  {
    name: 'a deleted task whose episode is finished but not on record as running: released as it is',
    in: { deleted: true, status: status({}), episode: finished(1) },
    steps: ['ReleaseTask'],
  },
  {
    name: 'no free slot: queued, nothing started',
    in: { freeSlots: 0 },
    steps: [],
  },
];

for (const c of orders) {
  test(`pass actions: ${c.name}`, () => {
    assert.deepEqual(steps(reconcile(input(c.in)).actions), c.steps);
  });
}

test('pass actions: events of an ended episode carry its log fields; the start event its number', () => {
  const out = reconcile(input({ status: runningEpisode(1), episode: finished(1) }));
  const [finishedEvent, started] = out.actions.filter((a) => a.type === 'RecordEvent');
  assert.deepEqual(finishedEvent?.type === 'RecordEvent' && finishedEvent.details, {
    episode: 1,
    outcome: 'continue',
    exitCode: 0,
    errorClass: 'none',
    costUSD: 0.5,
    completion: undefined,
  });
  assert.deepEqual(started?.type === 'RecordEvent' && started.details, { episode: 2 });
  assert.equal(out.wakeDependents, true, 'an episode ended');
});

test('pass actions: dependents are woken by an ended episode or a new phase, not by a pass that changes neither', () => {
  const queued = reconcile(input({ freeSlots: 0 }));
  assert.equal(queued.status.phase, 'Pending');
  assert.equal(queued.wakeDependents, true, 'no phase on record → Pending');
  assert.equal(reconcile(input({ status: queued.status, freeSlots: 0 })).wakeDependents, false, 'still queued');
  const running = reconcile(input({ status: runningEpisode(1), episode: { number: 1, state: 'running' } }));
  assert.equal(running.wakeDependents, false, 'still running');
  const failed = reconcile(input({ status: runningEpisode(1), episode: finished(1, 1) }));
  assert.equal(failed.wakeDependents, true);
});

test('pass actions: a deleted task let go as it was keeps its status; one whose end this pass records writes it', () => {
  const asItIs = reconcile(input({ deleted: true }));
  assert.equal(asItIs.keepsStatus, true);
  assert.deepEqual(asItIs.status, input({}).status, 'the status on record, untouched');
  const ended = reconcile(
    input({
      deleted: true,
      status: runningEpisode(1),
      episode: finished(1),
      stopRequested: { number: 1, reason: 'deleted' },
    }),
  );
  assert.equal(ended.keepsStatus, undefined);
  assert.equal(ended.status.currentEpisode, undefined);
});

test('pass actions: free slots are a count; any free one starts the episode', () => {
  for (const freeSlots of [1, 3]) assert.ok(steps(reconcile(input({ freeSlots })).actions).includes('StartEpisode 1'));
  assert.equal(reconcile(input({ freeSlots: -1 })).status.reason, 'Queued', 'over-committed counts as none free');
});

test('pass actions: a task waits for a slot only when nothing but the slot keeps it from starting', () => {
  assert.equal(reconcile(input({ freeSlots: 0 })).waitsForSlot, true);
  assert.equal(reconcile(input({})).waitsForSlot, false, 'it starts');
  const backoff = status({ phase: 'Waiting', reason: 'Backoff', nextEpisodeAt: '2026-11-22T12:05:00.000Z' });
  assert.equal(reconcile(input({ status: backoff, freeSlots: 0 })).waitsForSlot, false, 'its backoff holds it');
});
