// One contract for tasks the system creates (spawned children, triggers' tasks), locally (spec documents
// under the state dir) and on a cluster (AgentTasks with an ownerReference, against the real apiserver).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CreatedTasks, TaskOwner } from '../../controller/core/created-tasks.ts';
import { KubeCreatedTasks } from '../../controller/sources/cluster/created-tasks.ts';
import { LocalCreatedTasks, withCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import type { LoadedSpecs } from '../../controller/sources/local/spec-files.ts';
import { taskPath } from '../../controller/kube/names.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { skipCluster } from '../support/cluster.ts';
import { clusterWithCrd, createNamespace, testClient } from '../support/kubelet.ts';
import { tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

interface Harness {
  store: CreatedTasks;
  /** An owner that exists (on a cluster: a real AgentTask, so its uid is real). */
  owner(name: string): Promise<TaskOwner>;
  /** The names of the tasks that exist now in the namespace, as the mode's task source would find them. */
  names(): Promise<string[]>;
  close(): Promise<void>;
}

const CHILD_SPEC = { prompt: 'work on {{task}}', agent: { command: ['true'] } };

async function localHarness(): Promise<Harness> {
  const stateDir = tempDir();
  let changes = 0;
  const store = new LocalCreatedTasks({
    stateDir,
    userTask: (_ns, name) => name === 'users-own',
    onChange: () => changes++,
  });
  const empty: LoadedSpecs = { tasks: new Map(), budgets: new Map(), errors: [], ignored: [], files: [], parsed: [] };
  return {
    store,
    owner: async (name) => ({ kind: 'AgentTask', namespace: 'default', name, file: join(stateDir, `${name}.yaml`) }),
    names: async () => [...withCreatedTasks(empty, stateDir).tasks.values()].map((t) => t.name).sort(),
    close: async () => assert.ok(changes > 0, 'onChange was called'),
  };
}

async function clusterHarness(): Promise<Harness> {
  const cluster = await clusterWithCrd();
  const client: KubeClient = await testClient(cluster);
  const ns = await createNamespace('created');
  const collection = taskPath(ns, '').replace(/\/$/, '');
  // A CRD applied just now (by this or a parallel test) answers 429 while its storage initializes.
  await waitFor('agenttasks served', () => client.get(collection).then(() => true));
  const owner = async (name: string): Promise<TaskOwner> => {
    const spec = { prompt: 'plan', agent: { command: ['true'] } };
    const made = await client.create<{ metadata: { uid: string } }>(collection, {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name, namespace: ns },
      spec,
    });
    return { kind: 'AgentTask', namespace: ns, name, uid: made.metadata.uid };
  };
  await owner('users-own');
  const names = async () => {
    const list = await client.get<{ items: Array<{ metadata: { name: string } }> }>(collection);
    return list.items
      .map((o) => o.metadata.name)
      .filter((n) => n.includes('-'))
      .sort();
  };
  return { store: new KubeCreatedTasks(client), owner, names, close: async () => client.close() };
}

const implementations = [
  { name: 'local', make: localHarness, skip: false as const },
  { name: 'cluster', make: clusterHarness, skip: skipCluster },
];

for (const impl of implementations) {
  describe(`created tasks contract: ${impl.name}`, { skip: impl.skip, timeout: 120_000 }, () => {
    let h: Harness;
    before(async () => (h = await impl.make()), { timeout: 90 * 60_000 });
    after(async () => h?.close());

    it('creates once: the same owner and name again is "exists", and the first spec stays', async () => {
      const parent = await h.owner('planner');
      assert.deepEqual(await h.store.create(parent, 'planner-a', CHILD_SPEC, { team: 'x' }), { result: 'created' });
      const again = await h.store.create(parent, 'planner-a', { ...CHILD_SPEC, prompt: 'changed' });
      assert.deepEqual(again, { result: 'exists' });
      const [child] = await h.store.list(parent);
      assert.equal(child?.name, 'planner-a');
      assert.deepEqual(child?.owner, { kind: 'AgentTask', name: 'planner' });
      assert.equal(child?.labels['episodic.dev/parent'], 'planner');
      assert.equal(child?.labels.team, 'x');
      assert.equal(child?.spec.prompt, 'work on {{task}}');
      assert.ok((await h.names()).includes('planner-a'), 'the task source has the child');
    });

    it("refuses a name another owner's task or a user's task has, and names that are not DNS labels", async () => {
      const parent = await h.owner('other');
      const stolen = await h.store.create(parent, 'planner-a', CHILD_SPEC);
      assert.equal(stolen.result, 'taken');
      assert.equal((await h.store.create(parent, 'users-own', CHILD_SPEC)).result, 'taken');
      for (const bad of ['../escape', 'a/b', 'UPPER', `x${'y'.repeat(70)}`]) {
        assert.equal((await h.store.create(parent, bad, CHILD_SPEC)).result, 'taken', bad);
      }
      assert.deepEqual(await h.store.list(parent), []);
    });

    it("deletes by owner: only that owner's tasks, and again is a no-op", async () => {
      const keep = await h.owner('keeper');
      const gone = await h.owner('leaver');
      await h.store.create(keep, 'keeper-1', CHILD_SPEC);
      await h.store.create(gone, 'leaver-1', CHILD_SPEC);
      await h.store.create(gone, 'leaver-2', CHILD_SPEC);
      assert.deepEqual((await h.store.deleteByOwner(gone)).sort(), ['leaver-1', 'leaver-2']);
      assert.deepEqual(await h.store.deleteByOwner(gone), []);
      const names = await h.names();
      assert.ok(names.includes('keeper-1'));
      assert.ok(!names.some((n) => n.startsWith('leaver-')), names.join(','));
      assert.equal((await h.store.list(keep)).length, 1);
    });

    it('a trigger owns tasks under its own label', async () => {
      const trigger: TaskOwner = { ...(await h.owner('nightly')), kind: 'AgentTrigger', uid: undefined };
      assert.deepEqual(await h.store.create(trigger, 'nightly-20261125', CHILD_SPEC), { result: 'created' });
      const [t] = await h.store.list(trigger);
      assert.equal(t?.labels['episodic.dev/trigger'], 'nightly');
      assert.equal(t?.labels['episodic.dev/parent'], undefined);
    });
  });
}
