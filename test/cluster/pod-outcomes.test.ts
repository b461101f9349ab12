// What happens to a task when its pod ends in ways only the kubelet or the scheduler can tell: deadline,
// OOM, eviction, deletion by someone else, an image that never pulls, no node that fits, a pod the API
// server refuses. FakeKubelet writes the pod status exactly as those components do.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  fakeClaudeSpec,
  listPods,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const skip = skipCluster;
const patient = { limits: { maxEpisodes: 10, maxConsecutiveFailures: 5, episodeTimeoutSeconds: 600 } };

describe('cluster controller: pod-level outcomes', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let controller: ClusterController;
  let kubelet: FakeKubelet;
  const apply = (name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });

  withController('ctl-outcomes', { imagePullGraceMs: 1_500 }, (f) => ({ ns, client, kubelet, controller } = f));

  it('DeadlineExceeded (activeDeadlineSeconds) → timeout, counted as a failure, next episode after backoff', async () => {
    await apply('slow', fakeClaudeSpec(patient));
    const pod = await kubelet.setRunning(await waitForPod(client, ns, 'slow-ep-1'));
    await kubelet.deadlineExceeded(pod);
    const task = await waitForTask(client, ns, 'slow', (s) => s.lastEpisode?.outcome === 'timeout');
    assert.equal(task.status?.consecutiveFailures, 1);
    await waitForPod(client, ns, 'slow-ep-2');
  });

  it('OOMKilled → failed with a hint', async () => {
    await apply('hungry', fakeClaudeSpec(patient));
    await kubelet.oomKilled(await kubelet.setRunning(await waitForPod(client, ns, 'hungry-ep-1')));
    const task = await waitForTask(client, ns, 'hungry', (s) => s.lastEpisode?.outcome === 'failed');
    assert.match(task.status?.lastEpisode?.message, /OOMKilled/);
    assert.equal(task.status?.lastEpisode?.exitCode, 137);
  });

  it('evicted → transient: retried, not a failure', async () => {
    await apply('evicted', fakeClaudeSpec(patient));
    await kubelet.evicted(await kubelet.setRunning(await waitForPod(client, ns, 'evicted-ep-1')));
    const task = await waitForTask(client, ns, 'evicted', (s) => s.lastEpisode?.outcome === 'transient');
    assert.equal(task.status?.retries, 1);
    assert.equal(task.status?.consecutiveFailures, 0);
    await waitForPod(client, ns, 'evicted-ep-2');
  });

  it('pod deleted by someone else → transient and a new episode', async () => {
    await apply('victim', fakeClaudeSpec(patient));
    await kubelet.setRunning(await waitForPod(client, ns, 'victim-ep-1'));
    await kubectl(['delete', 'pod', 'victim-ep-1', '-n', ns, '--wait=false']);
    const task = await waitForTask(client, ns, 'victim', (s) => s.lastEpisode?.outcome === 'transient');
    assert.match(task.status?.lastEpisode?.message, /deleted by someone else/);
    await waitForPod(client, ns, 'victim-ep-2');
  });

  it('an image that never pulls → Failed after the grace period with the kubelet message; the pod is removed', async () => {
    await apply('noimage', fakeClaudeSpec(patient, { image: 'registry.invalid/nope:1' }));
    await kubelet.imagePullBackOff(await waitForPod(client, ns, 'noimage-ep-1'));
    const task = await waitForTask(client, ns, 'noimage', (s) => s.phase === 'Failed');
    assert.equal(task.status?.reason, 'FatalError');
    assert.match(task.status?.message, /ImagePullBackOff: Back-off pulling image "registry.invalid\/nope:1"/);
    await waitFor('stuck pod deleted', async () => (await listPods(client, ns, 'noimage')).length === 0);
  });

  it('unschedulable → Waiting with the scheduler message; the pod is kept and the episode goes on once it runs', async () => {
    await apply('big', fakeClaudeSpec(patient));
    const pod = await kubelet.unschedulable(await waitForPod(client, ns, 'big-ep-1'));
    const waiting = await waitForTask(client, ns, 'big', (s) => s.phase === 'Waiting');
    assert.equal(waiting.status?.reason, 'Unschedulable');
    assert.match(waiting.status?.message, /Insufficient memory/);
    assert.equal(waiting.status?.currentEpisode?.number, 1);
    assert.equal((await listPods(client, ns, 'big')).length, 1);
    await kubelet.setRunning(pod);
    await waitForTask(client, ns, 'big', (s) => s.phase === 'Running');
  });

  it('a pod that ends without a decodable result → failed with its exit code', async () => {
    await apply('mute', fakeClaudeSpec(patient));
    await kubelet.terminate(await kubelet.setRunning(await waitForPod(client, ns, 'mute-ep-1')), {
      exitCode: 3,
      message: 'exec format error',
    });
    const task = await waitForTask(client, ns, 'mute', (s) => s.lastEpisode?.outcome === 'failed');
    assert.equal(task.status?.lastEpisode?.exitCode, 3);
    assert.match(task.status?.lastEpisode?.message, /without a result \(exit code 3/);
  });

  it('a pod the API server refuses → Failed with its message, no retry loop', async () => {
    await apply('refused', fakeClaudeSpec(patient, { resources: { limits: { memory: 'lots' } } }));
    const task = await waitForTask(client, ns, 'refused', (s) => s.phase === 'Failed');
    assert.match(
      task.status?.message,
      /refused the episode pod: Pod in version "v1" cannot be handled as a Pod: quantities must match/,
    );
    assert.equal(task.status?.episodes, 1);
    assert.equal((await listPods(client, ns, 'refused')).length, 0);
  });
});
