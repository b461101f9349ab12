// Task lifecycle on the real API server: dependsOn, deletion (finalizer cleanup), suspend, pod retention,
// --max-concurrent and --budget-usd. Episodes end through FakeKubelet with result JSON written directly
// (the runner itself is covered in controller-episodes.test.ts).
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import type { Cluster } from '../support/cluster.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  createNamespace,
  fakeClaudeSpec,
  getTask,
  listPods,
  startController,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const skip = skipCluster;
const SUCCESS = JSON.stringify({ exitCode: 0, completion: 'promise', message: 'done' });
const CONTINUE = JSON.stringify({ exitCode: 0, message: 'more to do' });

describe('cluster controller: task lifecycle', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let controller: ClusterController;
  let kubelet: FakeKubelet;
  const apply = (name: string, spec: Record<string, unknown>, namespace = ns) =>
    kubectl(['apply', '-f', '-'], { input: agentTaskManifest(namespace, name, spec) });
  const finish = async (namespace: string, pod: string, message: string) =>
    kubelet.terminate(await kubelet.setRunning(await waitForPod(client, namespace, pod)), { exitCode: 0, message });

  withController('ctl-lifecycle', {}, (f) => ({ cluster, ns, client, kubelet, controller } = f));

  it('dependsOn: waits for the dependency to succeed, then starts', async () => {
    await apply('second', fakeClaudeSpec({ dependsOn: ['first'] }));
    const waiting = await waitForTask(client, ns, 'second', (s) => s.reason === 'DependenciesPending');
    assert.equal(waiting.status?.phase, 'Waiting');
    assert.match(waiting.status?.message, /waiting for first/);
    await apply('first', fakeClaudeSpec());
    await finish(ns, 'first-ep-1', SUCCESS);
    await waitForTask(client, ns, 'first', (s) => s.phase === 'Succeeded');
    await waitForPod(client, ns, 'second-ep-1');
  });

  it('dependsOn: a failed dependency skips the task; a cycle is an InvalidSpec', async () => {
    await apply('broken-dep', { prompt: 'x', agent: { command: ['a'] } });
    await apply('after-broken', fakeClaudeSpec({ dependsOn: ['broken-dep'] }));
    const skipped = await waitForTask(client, ns, 'after-broken', (s) => s.phase === 'Skipped');
    assert.equal(skipped.status?.reason, 'DependencyFailed');
    await apply('cyc-a', fakeClaudeSpec({ dependsOn: ['cyc-b'] }));
    await apply('cyc-b', fakeClaudeSpec({ dependsOn: ['cyc-a'] }));
    const cyc = await waitForTask(client, ns, 'cyc-a', (s) => s.reason === 'InvalidSpec');
    assert.match(cyc.status?.message, /spec\.dependsOn: a cycle cyc-a → cyc-b → cyc-a/);
  });

  it('kubectl delete: the running pod is deleted, then the finalizer is removed and the task is gone', async () => {
    await apply('doomed', fakeClaudeSpec());
    await kubelet.setRunning(await waitForPod(client, ns, 'doomed-ep-1'));
    await waitForTask(client, ns, 'doomed', (s) => s.phase === 'Running' && true);
    await waitFor('finalizer', async () =>
      (await getTask(client, ns, 'doomed'))?.metadata.finalizers?.includes('episodic.dev/cleanup'),
    );
    await kubectl(['delete', 'at', 'doomed', '-n', ns, '--timeout=20s']);
    assert.equal(await getTask(client, ns, 'doomed'), undefined);
    assert.deepEqual(await listPods(client, ns, 'doomed'), []);
  });

  it('suspend: stops the running episode (cancelled, not a failure); resume starts the next one', async () => {
    await apply('pausable', fakeClaudeSpec());
    await kubelet.setRunning(await waitForPod(client, ns, 'pausable-ep-1'));
    await kubectl(['patch', 'at', 'pausable', '-n', ns, '--type=merge', '-p', '{"spec":{"suspend":true}}']);
    const suspended = await waitForTask(
      client,
      ns,
      'pausable',
      (s) => s.phase === 'Suspended' && s.lastEpisode?.outcome === 'cancelled',
    );
    assert.equal(suspended.status?.consecutiveFailures, 0);
    await waitFor('pod deleted', async () => (await listPods(client, ns, 'pausable')).length === 0);
    await kubectl(['patch', 'at', 'pausable', '-n', ns, '--type=merge', '-p', '{"spec":{"suspend":false}}']);
    await waitForPod(client, ns, 'pausable-ep-2');
  });

  it('keeps the last 3 finished episode pods per task', async () => {
    await apply('chatty', fakeClaudeSpec({ limits: { maxEpisodes: 5, episodeTimeoutSeconds: 600 } }));
    for (let n = 1; n <= 5; n++) await finish(ns, `chatty-ep-${n}`, CONTINUE);
    const task = await waitForTask(client, ns, 'chatty', (s) => s.phase === 'NeedsReview');
    assert.equal(task.status?.reason, 'MaxEpisodesReached');
    const names = async () => (await listPods(client, ns, 'chatty')).map((p) => p.metadata.name).sort();
    await waitFor('old pods pruned', async () => (await names()).length === 3);
    assert.deepEqual(await names(), ['chatty-ep-3', 'chatty-ep-4', 'chatty-ep-5']);
  });

  describe('--max-concurrent 1 and --budget-usd 0.3', () => {
    let limitedNs: string;
    let limited: ClusterController;
    before(async () => {
      limitedNs = await createNamespace('ctl-limits');
      limited = await startController(cluster, { namespace: limitedNs, maxConcurrent: 1, budgetUSD: 0.3 });
    });
    after(async () => limited?.stop());

    it('queues the second task until a slot frees, then stops everyone at the global budget', async () => {
      await apply('one', fakeClaudeSpec(), limitedNs);
      await waitForPod(client, limitedNs, 'one-ep-1');
      await apply('two', fakeClaudeSpec(), limitedNs);
      const queued = await waitForTask(client, limitedNs, 'two', (s) => s.reason === 'Queued');
      assert.equal(queued.status?.phase, 'Pending');
      assert.equal((await listPods(client, limitedNs, 'two')).length, 0);

      await finish(limitedNs, 'one-ep-1', JSON.stringify({ exitCode: 0, completion: 'promise', costUSD: 0.2 }));
      await finish(limitedNs, 'two-ep-1', JSON.stringify({ exitCode: 0, costUSD: 0.2 }));
      const capped = await waitForTask(client, limitedNs, 'two', (s) => s.phase === 'NeedsReview');
      assert.equal(capped.status?.reason, 'GlobalBudgetExceeded');
      assert.match(capped.status?.message, /\$0\.4000 of --budget-usd \$0\.3/);
      assert.equal((await listPods(client, limitedNs, 'two')).length, 1);
    });
  });
});
