// Exactly once across a restart: a status that still has an episode's ops pending (the controller died
// after writing the episode's end, before or after applying them) gets ApplyOps again, and the blackboard's
// per-task marker makes the second application a no-op, so a later writer's value is never overwritten.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { DesiredTask } from '../../controller/core/ports.ts';
import { blackboardPath } from '../../controller/util/state-layout.ts';
import { LocalOpsApplier } from '../../controller/ops/local-ops.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import { tempDir } from '../support/local.ts';

const task = (name: string): DesiredTask => ({
  key: `default/${name}`,
  namespace: 'default',
  name,
  generation: 1,
  dependsOn: [],
  deleting: false,
});

test('ops applied, controller killed before recording it: the restart applies them again as a no-op', async () => {
  const state = tempDir();
  const applier = new LocalOpsApplier(state);
  const status = {
    ...emptyStatus(),
    observedGeneration: 1,
    phase: 'Pending' as const,
    episodes: 2,
    pendingOps: { episode: 2, ops: [{ op: 'set' as const, key: 'k', value: 'from-a' }] },
  };
  const restarted = reconcile({
    namespace: 'default',
    name: 'a',
    generation: 1,
    spec: AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['x'] } }),
    status,
    dependencies: {},
    freeSlots: 1,
    now: new Date(),
    jitter: 0,
  });
  const apply = restarted.actions.find((a) => a.type === 'ApplyOps');
  assert.ok(apply?.type === 'ApplyOps');
  assert.ok(!restarted.actions.some((a) => a.type === 'StartEpisode'), 'no episode starts before its ops apply');

  await applier.apply(task('a'), apply.episode, apply.ops); // before the kill
  await applier.apply(task('b'), 1, [{ op: 'set', key: 'k', value: 'from-b' }]); // a later writer
  await applier.apply(task('a'), apply.episode, apply.ops); // after the restart: the same episode again
  const board = JSON.parse(readFileSync(blackboardPath(state, 'default'), 'utf8'));
  assert.deepEqual(board, { entries: { k: 'from-b' }, applied: { a: 2, b: 1 } });

  await applier.apply(task('a'), 3, [{ op: 'del', key: 'k' }]); // the next episode of a applies
  assert.deepEqual(JSON.parse(readFileSync(blackboardPath(state, 'default'), 'utf8')).entries, {});
});

test('the blackboard is bounded: a new key past the cap is rejected, an existing key may still change', async () => {
  const state = tempDir();
  const applier = new LocalOpsApplier(state);
  const sets = Array.from({ length: 128 }, (_, i) => ({ op: 'set' as const, key: `k${i}`, value: 'v' }));
  assert.deepEqual((await applier.apply(task('a'), 1, sets)).rejected, []);
  const more = await applier.apply(task('a'), 2, [
    { op: 'set', key: 'k0', value: 'changed' },
    { op: 'set', key: 'new', value: 'v' },
  ]);
  // The second op given (index 1) is the one refused.
  assert.deepEqual(more.rejected, [{ index: 1, op: 'set', message: 'set new: the blackboard holds 128 keys already' }]);
  const spawn = await applier.apply(task('a'), 3, [{ op: 'spawn', name: 'w', prompt: 'p' }]);
  assert.match(spawn.rejected[0]?.message ?? '', /spawn: not supported by this controller yet/);
});
