// The blackboard's bound through both modes' OpsAppliers (a JSON file; ConfigMap episodic-blackboard on the
// real apiserver): a hostile agent filling it stops at BLACKBOARD_KEYS_MAX keys, an existing key may still
// change, and the same episode applied again (a kill -9 before it was recorded) changes nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BLACKBOARD_KEYS_MAX } from '../../controller/api/bounds.ts';
import type { Op } from '../../controller/api/ops.ts';
import type { DesiredTask, OpsApplier } from '../../controller/core/ports.ts';
import { readClusterBlackboard } from '../../controller/ops/cluster-blackboard.ts';
import { ClusterOpsApplier } from '../../controller/ops/cluster-ops.ts';
import { readLocalBlackboard } from '../../controller/ops/local-blackboard.ts';
import { LocalOpsApplier } from '../../controller/ops/local-ops.ts';
import { skipCluster } from '../support/cluster.ts';
import { clusterWithCrd, createNamespace, testClient } from '../support/kubelet.ts';
import { tempDir } from '../support/local.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

interface Board {
  namespace: string;
  applier: OpsApplier;
  entries(): Promise<Record<string, string>>;
  close(): void;
}

async function localBoard(): Promise<Board> {
  const state = tempDir();
  return {
    namespace: 'default',
    applier: new LocalOpsApplier(state),
    entries: async () => readLocalBlackboard(state, 'default').entries,
    close: () => {},
  };
}

async function clusterBoard(): Promise<Board> {
  const client = await testClient(await clusterWithCrd());
  const namespace = await createNamespace('bb-bounds');
  return {
    namespace,
    applier: new ClusterOpsApplier(client),
    entries: async () => (await readClusterBlackboard(client, namespace)).entries,
    close: () => client.close(),
  };
}

const task = (namespace: string, name: string): DesiredTask => ({
  key: `${namespace}/${name}`,
  namespace,
  name,
  generation: 1,
  dependsOn: [],
  deleting: false,
});
const sets = (from: number, count: number): Op[] =>
  Array.from({ length: count }, (_, i) => ({ op: 'set', key: `k${from + i}`, value: 'v'.repeat(4096) }));

for (const mode of [
  { name: 'local', make: localBoard, skip: false as const },
  { name: 'cluster', make: clusterBoard, skip: skipCluster },
]) {
  describe(`blackboard bound: ${mode.name}`, { skip: mode.skip, timeout: SUITE_HANG_GUARD_MS }, () => {
    it('a flood of keys stops at the bound; an existing key still changes; a second application is a no-op', async () => {
      const b = await mode.make();
      try {
        const evil = task(b.namespace, 'evil');
        for (let episode = 1; episode * 32 <= BLACKBOARD_KEYS_MAX; episode++) {
          const applied = await b.applier.apply(evil, episode, sets((episode - 1) * 32, 32));
          assert.deepEqual(applied.rejected, []);
        }
        const past = await b.applier.apply(evil, 5, [
          ...sets(BLACKBOARD_KEYS_MAX, 2),
          { op: 'set', key: 'k0', value: 'x' },
        ]);
        assert.equal(past.rejected.length, 2);
        assert.match(past.rejected[0]?.message ?? '', /holds 128 keys already/);
        const entries = await b.entries();
        assert.equal(Object.keys(entries).length, BLACKBOARD_KEYS_MAX);
        assert.equal(entries.k0, 'x');
        await b.applier.apply(evil, 1, [{ op: 'del', key: 'k0' }]);
        assert.equal((await b.entries()).k0, 'x', 'episode 1 was applied before');
      } finally {
        b.close();
      }
    });
  });
}
