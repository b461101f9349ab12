// Table tests for agent ops in the pure reconciler: push and the context stack, sleep, the ops with effects
// elsewhere (pending until applied, applied again after a restart), and rejections.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput, ReconcileResult } from '../../controller/reconciler/reconcile.ts';
import { stackStatus } from '../../controller/reconciler/stack.ts';

const NOW = new Date('2026-11-25T12:00:00.000Z');
const STACK = ['plan', 'build', 'ship'];

function input(
  over: Partial<ReconcileInput> = {},
  specOver: Record<string, unknown> = { stack: STACK },
): ReconcileInput {
  return {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: AgentTaskSpecSchema.parse({ agent: { command: ['agent'] }, ...specOver }),
    status: { ...emptyStatus(), observedGeneration: 1 },
    dependencies: {},
    freeSlots: 1,
    now: NOW,
    jitter: 0.5,
    ...over,
  };
}

/** Episode n of a task whose stack is `frames` ends with `result`. */
function ending(
  result: EpisodeResultInput,
  frames: string[] | undefined = STACK,
  n = 1,
  extra: Partial<AgentTaskStatus> = {},
) {
  return {
    status: {
      ...emptyStatus(),
      observedGeneration: 1,
      phase: 'Running' as const,
      episodes: n,
      currentEpisode: { number: n, startedAt: '2026-11-25T11:59:00.000Z' },
      ...(frames ? { stack: stackStatus(frames) } : {}),
      ...extra,
    },
    episode: { number: n, state: 'finished' as const, finishedAt: NOW.toISOString(), result: episodeResult(result) },
  };
}

const kinds = (out: ReconcileResult) =>
  out.actions.map((a) => (a.type === 'RecordEvent' ? `event ${a.reason}` : a.type));

test('a stack task starts with spec.stack in status; status.stack shows depth and the top frames, bounded', () => {
  const long = 'x'.repeat(500);
  const out = reconcile(input({}, { stack: [long, 'b', 'c', 'd'] }));
  assert.equal(out.status.stack?.depth, 4);
  assert.equal(out.status.stack?.top.length, 3);
  assert.equal(out.status.stack?.top[0]?.length, 200);
  assert.equal(out.status.stack?.frames[0], long);
  assert.ok(kinds(out).includes('StartEpisode'));
});

const stackCases: Array<{
  name: string;
  result: EpisodeResultInput;
  frames?: string[];
  spec?: Record<string, unknown>;
  stack: string[] | undefined;
  phase: string;
  reason: string;
  starts: boolean;
}> = [
  {
    name: 'exit 0 pops the top; the next frame runs',
    result: { exitCode: 0 },
    stack: ['build', 'ship'],
    phase: 'Running',
    reason: 'EpisodeRunning',
    starts: true,
  },
  {
    name: 'a completion signal finishes the frame, not the task, while frames are left',
    result: { exitCode: 0, completion: 'promise' },
    stack: ['build', 'ship'],
    phase: 'Running',
    reason: 'EpisodeRunning',
    starts: true,
  },
  {
    name: 'push decomposes: its frames go on top in the order given, the first runs next',
    result: { exitCode: 0, ops: [{ op: 'push', frames: ['step a', 'step b'] }] },
    stack: ['step a', 'step b', 'build', 'ship'],
    phase: 'Running',
    reason: 'EpisodeRunning',
    starts: true,
  },
  {
    name: 'push of one frame continues (the popped frame pushed back)',
    result: { exitCode: 0, ops: [{ op: 'push', frames: ['plan more'] }] },
    stack: ['plan more', 'build', 'ship'],
    phase: 'Running',
    reason: 'EpisodeRunning',
    starts: true,
  },
  {
    name: 'a failed episode pops nothing (its frame runs again after the backoff)',
    result: { exitCode: 1 },
    stack: STACK,
    phase: 'Waiting',
    reason: 'Backoff',
    starts: false,
  },
  {
    name: 'the last frame done: Succeeded, StackEmpty',
    result: { exitCode: 0 },
    frames: ['ship'],
    stack: [],
    phase: 'Succeeded',
    reason: 'StackEmpty',
    starts: false,
  },
  {
    name: 'restartStack: an emptied stack starts over with spec.stack',
    result: { exitCode: 0 },
    frames: ['ship'],
    spec: { stack: STACK, restartStack: true },
    stack: STACK,
    phase: 'Running',
    reason: 'EpisodeRunning',
    starts: true,
  },
  {
    name: 'push on a task without a stack is rejected; the task goes on as before',
    result: { exitCode: 0, ops: [{ op: 'push', frames: ['x'] }] },
    frames: undefined,
    spec: { prompt: 'do it' },
    stack: undefined,
    phase: 'Running',
    reason: 'EpisodeRunning',
    starts: true,
  },
];

for (const c of stackCases) {
  test(`stack: ${c.name}`, () => {
    const out = reconcile(input(ending(c.result, c.frames ?? (c.spec?.prompt ? undefined : STACK)), c.spec));
    assert.deepEqual(out.status.stack?.frames, c.stack);
    assert.equal(out.status.phase, c.phase);
    assert.equal(out.status.reason, c.reason);
    assert.equal(kinds(out).includes('StartEpisode'), c.starts);
  });
}

test('push past the depth bound is rejected with a message in the record and an event; the other ops apply', () => {
  const frames = Array.from({ length: 16 }, (_, i) => `f${i}`);
  const deep = Array.from({ length: 60 }, (_, i) => `d${i}`);
  const out = reconcile(
    input(
      ending(
        {
          exitCode: 0,
          ops: [
            { op: 'push', frames },
            { op: 'sleep', seconds: 60 },
          ],
        },
        deep,
      ),
    ),
  );
  assert.equal(out.status.stack?.depth, 59);
  assert.match(out.status.lastEpisode?.opsRejected ?? '', /push: the stack would hold more than 64 frames/);
  assert.deepEqual(out.status.lastEpisode?.ops, ['push 16', 'sleep 60s']);
  const record = out.actions.find((a) => a.type === 'RecordEpisode');
  assert.match(record?.type === 'RecordEpisode' ? (record.record.opsRejected ?? '') : '', /more than 64 frames/);
  assert.ok(kinds(out).includes('event OpsRejected'));
  assert.equal(out.status.reason, 'Sleeping');
});

test('rejected lines from the agent go into the record and a Warning event, never their payload', () => {
  const out = reconcile(
    input(ending({ exitCode: 0, opsRejected: [{ line: 2, message: 'unknown op "rm"' }] }, undefined), { prompt: 'p' }),
  );
  const event = out.actions.find((a) => a.type === 'RecordEvent' && a.reason === 'OpsRejected');
  assert.equal(event?.type === 'RecordEvent' ? event.eventType : undefined, 'Warning');
  assert.match(event?.type === 'RecordEvent' ? event.message : '', /episode 1: 1 op rejected: line 2: unknown op "rm"/);
});

test('sleep {seconds} and {until}: Waiting, Sleeping, nextEpisodeAt; then the next episode starts', () => {
  for (const op of [
    { op: 'sleep' as const, seconds: 90 },
    { op: 'sleep' as const, until: '2026-11-25T12:01:30Z' },
  ]) {
    const out = reconcile(input(ending({ exitCode: 0, ops: [op] }, undefined), { prompt: 'p' }));
    assert.equal(out.status.phase, 'Waiting');
    assert.equal(out.status.reason, 'Sleeping');
    assert.equal(out.status.nextEpisodeAt, '2026-11-25T12:01:30.000Z');
    assert.equal(out.requeueAfterMs, 90_000);
    assert.ok(!kinds(out).includes('StartEpisode'));
    const later = reconcile(input({ status: out.status, now: new Date('2026-11-25T12:01:29Z') }, { prompt: 'p' }));
    assert.equal(later.status.reason, 'Sleeping');
    const woken = reconcile(input({ status: out.status, now: new Date('2026-11-25T12:01:30Z') }, { prompt: 'p' }));
    assert.ok(kinds(woken).includes('StartEpisode'));
  }
});

test('sleep: a time already past does not wait; more than 30 days ahead is rejected; a finished task does not sleep', () => {
  const past = reconcile(
    input(ending({ exitCode: 0, ops: [{ op: 'sleep', until: '2026-01-01T00:00:00Z' }] }, undefined), { prompt: 'p' }),
  );
  assert.ok(kinds(past).includes('StartEpisode'));
  const far = reconcile(
    input(ending({ exitCode: 0, ops: [{ op: 'sleep', until: '2027-06-01T00:00:00Z' }] }, undefined), { prompt: 'p' }),
  );
  assert.match(far.status.lastEpisode?.opsRejected ?? '', /sleep: more than 2592000 seconds ahead/);
  const done = reconcile(input(ending({ exitCode: 0, ops: [{ op: 'sleep', seconds: 60 }] }, ['ship'])));
  assert.equal(done.status.reason, 'StackEmpty');
});

test('set/del wait in pendingOps: ApplyOps before the next episode starts, at once; cleared once applied', () => {
  const ops = [
    { op: 'set' as const, key: 'plan', value: 'v1' },
    { op: 'push' as const, frames: ['x'] },
    { op: 'del' as const, key: 'old' },
  ];
  const out = reconcile(input(ending({ exitCode: 0, ops })));
  assert.deepEqual(out.status.pendingOps, { episode: 1, ops: [ops[0], ops[2]] });
  assert.deepEqual(kinds(out), ['RecordEpisode', 'event EpisodeFinished', 'ApplyOps']);
  assert.equal(out.status.reason, 'ApplyingOps');
  assert.equal(out.requeueAfterMs, 0);
  // The loop applied them: the next pass clears them and starts the next episode.
  const next = reconcile(input({ status: out.status, opsApplied: 1 }));
  assert.equal(next.status.pendingOps, undefined);
  assert.deepEqual(kinds(next), ['StartEpisode', 'event EpisodeStarted']);
  // A restarted controller (no memory of applying them) applies them again: the stores make that a no-op.
  const restarted = reconcile(input({ status: out.status }));
  assert.deepEqual(kinds(restarted), ['ApplyOps']);
  // A task being deleted applies nothing: with no episode running it is let go.
  assert.deepEqual(kinds(reconcile(input({ status: out.status, deleted: true }))), ['ReleaseTask']);
});

test('pending ops of a task that just ended are still applied', () => {
  const out = reconcile(input(ending({ exitCode: 0, ops: [{ op: 'set', key: 'result', value: 'done' }] }, ['ship'])));
  assert.equal(out.status.phase, 'Succeeded');
  assert.ok(kinds(out).includes('ApplyOps'));
});

test('an edited spec re-opens a finished stack task with spec.stack again', () => {
  const status = {
    ...emptyStatus(),
    observedGeneration: 1,
    phase: 'Succeeded' as const,
    reason: 'StackEmpty',
    stack: stackStatus([]),
  };
  const out = reconcile(input({ status, generation: 2 }));
  assert.deepEqual(out.status.stack?.frames, STACK);
  assert.ok(kinds(out).includes('StartEpisode'));
});

test('a finished frame is progress: a stack of workspace-neutral frames never trips the no-progress breaker', () => {
  const breaker = { state: 'Closed' as const, noProgress: 4, halfOpen: 0, sameError: 0 };
  const popped = reconcile(input(ending({ exitCode: 0 }, STACK, 1, { breaker })));
  assert.equal(popped.status.breaker?.noProgress, 0);
  assert.equal(popped.status.breaker?.state, 'Closed');
  // A failed episode finishes no frame: its breaker counts are the breaker's own (not reset here).
  const failed = reconcile(input(ending({ exitCode: 1 }, STACK, 1, { breaker })));
  assert.equal(failed.status.breaker?.noProgress, 4);
});
