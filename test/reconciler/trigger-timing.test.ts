// reconcileTrigger's timing, table-tested with the clock and the jitter as inputs: the backoff after a failed
// pass (util/retry-delay.ts through trigger-timing.ts), how an action's outcome folds into the status, the
// timer's delays and which task phase changes wake a trigger's pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentTriggerStatus } from '../../controller/api/agent-trigger.ts';
import { AgentTriggerStatusSchema } from '../../controller/api/agent-trigger.ts';
import type { TriggerAction, TriggerFacts } from '../../controller/reconciler/trigger-reconcile.ts';
import { reconcileTrigger, recordOutcome } from '../../controller/reconciler/trigger-reconcile.ts';
import {
  FOLLOW_UP_MS,
  MAX_BACKOFF_MS,
  nextTimerDelay,
  wakeOnPhase,
} from '../../controller/reconciler/trigger-timing.ts';
import { NOW, listed, facts, after } from './trigger-facts.ts';

const forgeDown = { kind: 'forge', message: 'GET /user -> 503' } as const;
const failures: Array<{ name: string; in: Partial<TriggerFacts>; afterMs: number; rateLimited?: string }> = [
  { name: 'first forge failure: pollSeconds', in: { failure: forgeDown }, afterMs: 30_000 },
  { name: 'second: doubled', in: { failure: forgeDown, failures: 1 }, afterMs: 60_000 },
  { name: 'equal jitter: at least half', in: { failure: forgeDown, failures: 1, jitter: 0 }, afterMs: 30_000 },
  { name: 'capped', in: { failure: forgeDown, failures: 20 }, afterMs: MAX_BACKOFF_MS },
  {
    name: 'not the forge (the apiserver, a file): 5 s',
    in: { failure: { kind: 'other', message: 'EIO' } },
    afterMs: 5_000,
  },
  {
    name: 'a rate limit waits for its reset and says so',
    in: { failure: { kind: 'rateLimited', resetAt: new Date(NOW.getTime() + 600_000), message: 'rate limit' } },
    afterMs: 600_000,
    rateLimited: new Date(NOW.getTime() + 600_000).toISOString(),
  },
  {
    name: 'a reset already past still waits a second',
    in: { failure: { kind: 'rateLimited', resetAt: new Date(NOW.getTime() - 5_000), message: 'rate limit' } },
    afterMs: 1_000,
    rateLimited: new Date(NOW.getTime() - 5_000).toISOString(),
  },
];
for (const c of failures)
  test(`failure: ${c.name}`, () => {
    const d = reconcileTrigger(facts({ status: AgentTriggerStatusSchema.parse({ cursor: 'c' }), ...c.in }));
    assert.equal(after(d), c.afterMs);
    assert.equal(d.failures, (c.in.failures ?? 0) + 1);
    assert.equal(d.status?.cursor, 'c', 'the cursor stays');
    assert.equal(d.status?.lastError, c.in.failure?.message);
    assert.equal(d.status?.rateLimitedUntil, c.rateLimited);
    assert.equal(d.status?.nextPollAt, d.nextPassAt?.toISOString());
  });

test('failure: a long error is cut to the status bound', () => {
  const d = reconcileTrigger(facts({ failure: { kind: 'other', message: 'x'.repeat(2000) } }));
  assert.equal(d.status?.lastError?.length, 500);
});

test('a success after failures resets the count', () => {
  assert.equal(reconcileTrigger(facts({ failures: 3, poll: listed() })).failures, 0);
});

test('recordOutcome: a created task counts, an existing one not; a report remembers its state and PR', () => {
  const base: AgentTriggerStatus = AgentTriggerStatusSchema.parse({ tasksCreated: 2 });
  const create: TriggerAction = { kind: 'create', name: 'x', spec: {}, labels: {} };
  assert.equal(recordOutcome(base, create, { kind: 'created' }).tasksCreated, 3);
  assert.equal(recordOutcome(base, create, { kind: 'exists' }).tasksCreated, 2);
  const report: TriggerAction = {
    kind: 'report',
    report: {
      task: 't-7',
      number: 7,
      key: 't/t-7',
      item: { number: 7, title: '', isPullRequest: false },
      actions: [],
      next: { label: 'done' },
    },
  };
  const pr = { number: 12, url: 'http://forge/o/r/pulls/12' };
  const out = recordOutcome(base, report, { kind: 'reported', pullRequest: pr });
  assert.deepEqual(out.reported, { 't-7': { label: 'done' } });
  assert.deepEqual(out.pullRequests, { 't-7': pr });
});

test('timer delays: a pass never follows sooner than a second; a delivery-woken pass gets one follow-up', () => {
  const at = (ms: number) => new Date(NOW.getTime() + ms);
  const none = { wokenWhileRunning: false, followUp: false };
  assert.deepEqual(nextTimerDelay(at(-5_000), NOW, none), { delayMs: 1_000, followUp: false });
  assert.deepEqual(nextTimerDelay(at(30_000), NOW, none), { delayMs: 30_000, followUp: false });
  assert.deepEqual(nextTimerDelay(at(30_000), NOW, { wokenWhileRunning: true, followUp: false }), {
    delayMs: 0,
    followUp: true,
  });
  assert.deepEqual(nextTimerDelay(at(30_000), NOW, { wokenWhileRunning: false, followUp: true }), {
    delayMs: FOLLOW_UP_MS,
    followUp: false,
  });
});

test("phase wakes: a seen task's move wakes a reporting or webhook trigger, a schedule's on a finish; first sight does not", () => {
  const reporting = { report: {}, source: {} };
  assert.equal(wakeOnPhase({ seen: false }, 'Running', reporting), false);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Running' }, 'Running', reporting), false);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Pending' }, 'Running', reporting), true);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Running' }, 'Succeeded', { source: { webhook: {} } }), true);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Running' }, 'Succeeded', { source: {} }), false);
  // historyLimit: a schedule's pass deletes the finished tasks past it as soon as one finishes.
  assert.equal(wakeOnPhase({ seen: true, phase: 'Running' }, 'Succeeded', { source: { schedule: {} } }), true);
  assert.equal(wakeOnPhase({ seen: true, phase: 'Pending' }, 'Running', { source: { schedule: {} } }), false);
});
