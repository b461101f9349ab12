// The suspend predicate, `spec.suspend || hold`, as a table, and the audit trail of setting and lifting a hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import type { SuspendHold } from '../../controller/api/hold.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';

const NOW = new Date('2026-11-22T12:00:00.000Z');
const ALICE: SuspendHold = { suspended: true, by: 'alice via console' };
const LIFTED: SuspendHold = { suspended: false, by: 'bob via console' };

function input(specSuspend: boolean, hold: SuspendHold | undefined, status?: AgentTaskStatus): ReconcileInput {
  return {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: AgentTaskSpecSchema.parse({ prompt: 'do it', agent: { command: ['agent'] }, suspend: specSuspend }),
    status: status ?? { ...emptyStatus(), observedGeneration: 1 },
    hold,
    dependencies: {},
    freeSlots: 1,
    now: NOW,
    jitter: 0.5,
  };
}

const table: Array<[string, boolean, SuspendHold | undefined, string | undefined]> = [
  ['neither', false, undefined, undefined],
  ['a lifted hold', false, LIFTED, undefined],
  ['spec.suspend', true, undefined, 'task is suspended'],
  ['spec.suspend with a lifted hold (a hold cannot override the spec)', true, LIFTED, 'task is suspended'],
  ['a hold', false, ALICE, 'task is suspended by alice via console'],
  ['both', true, ALICE, 'task is suspended by spec.suspend and by alice via console'],
];

for (const [name, specSuspend, hold, message] of table) {
  test(`suspend predicate: ${name} → ${message ?? 'runs'}`, () => {
    const out = reconcile(input(specSuspend, hold));
    const starts = out.actions.filter((a) => a.type === 'StartEpisode');
    if (message === undefined) {
      assert.equal(out.status.phase, 'Running');
      assert.equal(starts.length, 1);
    } else {
      assert.deepEqual([out.status.phase, out.status.reason, out.status.message], ['Suspended', 'Suspended', message]);
      assert.deepEqual(starts, []);
    }
  });
}

test('a hold on a running task stops its episode as cancelled, and the message names who', () => {
  const running = { ...emptyStatus(), observedGeneration: 1, phase: 'Running' as const, episodes: 2 };
  const out = reconcile(
    input(false, ALICE, { ...running, currentEpisode: { number: 2, startedAt: NOW.toISOString() } }),
  );
  assert.deepEqual(
    out.actions.find((a) => a.type === 'StopEpisode'),
    { type: 'StopEpisode', number: 2, reason: 'cancelled' },
  );
  assert.equal(out.status.message, 'stopping episode 2: task suspended by alice via console');
});

test('setting and lifting a hold is audited once each, with who did it', () => {
  const held = reconcile(input(false, ALICE));
  const entries = () => (held.status.audit ?? []).map((a) => [a.action, a.by, a.message]);
  assert.deepEqual(entries(), [['Suspended', 'user:alice via console', 'suspended by alice via console']]);
  assert.ok(held.actions.some((a) => a.type === 'RecordEvent' && a.reason === 'Suspended'));
  // The next pass with the same hold adds nothing.
  const again = reconcile(input(false, ALICE, held.status));
  assert.equal(again.status.audit?.length, 1);

  const lifted = reconcile(input(false, LIFTED, again.status));
  assert.deepEqual(
    lifted.status.audit?.map((a) => [a.action, a.by, a.message]),
    [...entries(), ['Unsuspended', 'user:bob via console', 'hold lifted']],
  );
  assert.equal(lifted.status.phase, 'Running', 'the task goes on');
  assert.equal(reconcile(input(false, LIFTED, lifted.status)).status.audit?.length, 2);
});

test('lifting a hold while spec.suspend is true is audited and says the spec still suspends the task', () => {
  const held = reconcile(input(true, ALICE));
  const lifted = reconcile(input(true, LIFTED, held.status));
  assert.equal(lifted.status.phase, 'Suspended');
  assert.equal(lifted.status.message, 'task is suspended');
  assert.deepEqual(lifted.status.audit?.at(-1)?.message, 'hold lifted; spec.suspend: true still suspends the task');
});

test('a hold whose annotations were removed by hand is audited as lifted by unknown', () => {
  const held = reconcile(input(false, ALICE));
  const gone = reconcile(input(false, undefined, held.status));
  assert.deepEqual(gone.status.audit?.at(-1)?.by, 'user:unknown');
  assert.equal(gone.status.phase, 'Running');
});
