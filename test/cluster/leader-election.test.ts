// Two controller processes with --leader-elect: only the Lease holder reconciles; kill -9 it and the
// other takes over within the lease duration, adopting the running episode instead of starting another.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import type { Cluster } from '../support/cluster.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  FakeKubelet,
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  listPods,
  startControllerProcess,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import type { ControllerProcess } from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const skip = skipCluster;
const LEASE_SECONDS = 4;

describe('cluster controller: leader election', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  const procs: ControllerProcess[] = [];
  const start = async () => {
    const p = await startControllerProcess(cluster, [
      '--namespace',
      ns,
      '--leader-elect',
      '--leader-election-namespace',
      ns,
      '--lease-duration',
      `${LEASE_SECONDS}s`,
      '--renew-deadline',
      '2s',
      '--retry-period',
      '1s',
    ]);
    procs.push(p);
    return p;
  };
  const lease = async () => JSON.parse(await kubectl(['get', 'lease', 'episodic-controller', '-n', ns, '-o', 'json']));
  const created = (p: ControllerProcess) =>
    p.logs.filter((l) => l.event === 'EpisodeStarted').map((l) => l.pod as string);

  before(
    async () => {
      cluster = await clusterWithCrd();
      ns = await createNamespace('ctl-leader');
      client = await testClient(cluster);
      kubelet = new FakeKubelet(client);
    },
    { timeout: 90 * 60_000 },
  );

  after(async () => {
    await Promise.all(procs.map((p) => p.kill()));
    client?.close();
  });

  it('one of two replicas leads and reconciles; the other stands by', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const holder = await waitFor(
      'a lease holder',
      async () => (await lease().catch(() => undefined))?.spec?.holderIdentity,
    );
    assert.ok([a.identity, b.identity].includes(holder));
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'led', fakeClaudeSpec()) });
    await kubelet.setRunning(await waitForPod(client, ns, 'led-ep-1'));
    await waitForTask(client, ns, 'led', (s) => s.phase === 'Running');
    const leader = holder === a.identity ? a : b;
    const standby = leader === a ? b : a;
    assert.deepEqual(created(leader), ['led-ep-1']);
    assert.deepEqual(created(standby), []);
    assert.ok(!standby.logs.some((l) => l.msg === 'became leader'));
  });

  it('kill -9 the leader → the standby takes over within the lease duration and adopts the running episode', async () => {
    const before = await lease();
    const leader = procs.find((p) => p.identity === before.spec.holderIdentity)!;
    const standby = procs.find((p) => p !== leader)!;
    await leader.kill('SIGKILL');
    const killedAt = Date.now();
    await waitFor(
      'the standby holds the lease',
      async () => (await lease()).spec.holderIdentity === standby.identity,
      15_000,
    );
    const takeover = Date.now() - killedAt;
    assert.ok(takeover <= (LEASE_SECONDS + 2) * 1000, `took over after ${takeover} ms`);
    const after = await lease();
    assert.equal(after.spec.leaseTransitions, (before.spec.leaseTransitions ?? 0) + 1);

    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'after', fakeClaudeSpec()) });
    await waitForPod(client, ns, 'after-ep-1');
    await kubelet.terminate(await waitForPod(client, ns, 'led-ep-1'), {
      exitCode: 0,
      message: JSON.stringify({ exitCode: 0, completion: 'promise' }),
    });
    await waitForTask(client, ns, 'led', (s) => s.phase === 'Succeeded' && s.episodes === 1);
    assert.deepEqual(
      (await listPods(client, ns, 'led')).map((p) => p.metadata.name),
      ['led-ep-1'],
    );
    assert.deepEqual(created(standby), ['after-ep-1']);
  });

  it('SIGTERM releases the lease: a new replica takes over at once', async () => {
    const current = procs.find((p) => p.child.exitCode === null && p.child.signalCode === null)!;
    const next = await start();
    assert.equal((await lease()).spec.holderIdentity, current.identity);
    const stoppedAt = Date.now();
    assert.equal(await current.kill('SIGTERM'), 0);
    await waitFor(
      'the new replica holds the lease',
      async () => (await lease()).spec.holderIdentity === next.identity,
      10_000,
    );
    assert.ok(Date.now() - stoppedAt < LEASE_SECONDS * 1000, 'faster than waiting for the lease to expire');
  });
});
