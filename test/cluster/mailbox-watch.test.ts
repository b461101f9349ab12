// Mailbox arrivals on the real apiserver wake their task through the ConfigMap informer, not the
// reconciler's resync: the loop runs on a ManualClock that never advances, so no requeue timer can fire.
// wake: onMessage starts the next episode's pod, interrupt deletes the running one; and the informer's watch
// recovers when the apiserver's connections are reset or its resourceVersion is gone (410), with a message
// sent while no watch was open still acted upon. The controller talks to the apiserver through a proxy.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { MAILBOX_RESYNC_MS } from '../../controller/reconciler/spawn-decide.ts';
import { KubeMailboxes } from '../../controller/sinks/cluster/mailboxes.ts';
import { proxiedKubeConfig } from '../support/chaos-proxy.ts';
import type { ChaosProxy } from '../support/chaos-proxy.ts';
import type { Cluster } from '../support/cluster.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  FakeKubelet,
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  startController,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import { runCli } from '../support/local.ts';

async function restarts(controller: ClusterController, cause: string): Promise<number> {
  const metric = await controller.metrics.watchRestarts.get();
  return metric.values.find((v) => v.labels.resource === 'configmaps' && v.labels.cause === cause)?.value ?? 0;
}

/** The controller's next list or watch of ConfigMaps waits for release(): meanwhile none is open. */
function holdNext(
  controller: ClusterController,
  method: 'get' | 'watch',
): { reached: Promise<void>; release: () => void } {
  const client = controller.client;
  const original = client[method].bind(client) as (...args: unknown[]) => Promise<unknown>;
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => {
    const held = async (...args: unknown[]) => {
      if (String(args[0]).endsWith('/configmaps')) {
        Reflect.deleteProperty(client, method); // the class's own method again
        resolve();
        await gate;
      }
      return original(...args);
    };
    Object.assign(client, { [method]: held });
  });
  return { reached, release };
}

describe('cluster controller: mailbox events', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let controller: ClusterController;
  let proxy: ChaosProxy;
  const clock = new ManualClock(new Date());
  const t0 = clock.now().getTime();
  const CONTINUE = JSON.stringify({ exitCode: 0, message: 'more to do' });
  const send = (to: string, id: string, text: string) =>
    new KubeMailboxes(client).send(ns, to, { id, from: 'test', at: new Date().toISOString(), text });

  /** A wake: onMessage task whose first episode ended: it waits, its resync armed and never fired. */
  async function awaiting(name: string): Promise<void> {
    const spec = fakeClaudeSpec({ prompt: 'Inbox:\n{{messages}}', wake: 'onMessage' });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });
    const pod = await kubelet.setRunning(await waitForPod(client, ns, `${name}-ep-1`));
    await kubelet.terminate(pod, { exitCode: 0, message: CONTINUE });
    await waitForTask(client, ns, name, (s) => s.reason === 'AwaitingMessage');
    await controller.idle();
    assert.ok(clock.pending().includes(MAILBOX_RESYNC_MS), `resync armed: ${clock.pending().join(', ')}`);
  }

  const promptOf = async (pod: string) =>
    (await waitForPod(client, ns, pod)).spec?.containers?.[0]?.env?.find(
      (e: { name: string }) => e.name === 'EPISODIC_PROMPT',
    )?.value ?? '';

  before(
    async () => {
      cluster = await clusterWithCrd();
      ns = await createNamespace('ctl-mail');
      client = await testClient(cluster);
      kubelet = new FakeKubelet(client);
      let kubeConfig: KubeConfig;
      ({ proxy, kubeConfig } = await proxiedKubeConfig(cluster));
      controller = await startController(cluster, { kubeConfig, namespace: ns, requestTimeoutMs: 5_000, clock });
      await controller.mailboxWatch.informer.waitForSync();
    },
    { timeout: 90 * 60_000 },
  );

  after(async () => {
    await controller?.stop();
    proxy?.close();
    client?.close();
  });

  it('wake: onMessage — episodic send --kubeconfig starts the next episode while virtual time stands still', async () => {
    await awaiting('ann');
    const args = ['send', 'ann', 'hello ann', '--kubeconfig', cluster.kubeconfigPath, '-n', ns, '--from', 'bob'];
    const sent = await runCli(args);
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(await promptOf('ann-ep-2'), /Inbox:\nfrom bob at \S+:\nhello ann/);
    assert.equal(clock.now().getTime(), t0);
  });

  it('interrupt — a message deletes the running episode’s pod (cancelled); the next pod gets the message', async () => {
    const spec = fakeClaudeSpec({ prompt: 'News:\n{{messages}}', interrupt: true });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'ivy', spec) });
    await kubelet.setRunning(await waitForPod(client, ns, 'ivy-ep-1'));
    await waitForTask(client, ns, 'ivy', (s) => s.phase === 'Running');
    await controller.idle();
    assert.deepEqual(await send('ivy', 'lead.1.0', 'stop, the spec changed'), { result: 'sent' });
    assert.match(await promptOf('ivy-ep-2'), /News:\nfrom test at \S+:\nstop, the spec changed/);
    const task = await waitForTask(client, ns, 'ivy', (s) => s.lastEpisode?.number === 1);
    assert.equal(task.status?.lastEpisode?.outcome, 'cancelled');
    assert.equal(task.status?.consecutiveFailures, 0);
    assert.equal(clock.now().getTime(), t0);
  });

  it('connections reset, a message sent while no watch is open → the re-watch delivers it', async () => {
    await awaiting('rex');
    const held = holdNext(controller, 'watch');
    assert.ok(proxy.reset() >= 3, 'the watches were open');
    await held.reached;
    assert.deepEqual(await send('rex', 'lead.1.0', 'sent during the outage'), { result: 'sent' });
    held.release();
    assert.match(await promptOf('rex-ep-2'), /sent during the outage/);
    assert.ok((await restarts(controller, 'error')) >= 1);
    assert.equal(clock.now().getTime(), t0);
  });

  // What a 410 Gone leads to. (This apiserver answers a ConfigMap watch from resourceVersion 1 by replaying
  // events rather than with a 410, so the 410 itself is provoked only for AgentTasks, in watch-recovery.)
  it('a relist, a message sent before it → the relist reports it and the message is acted upon', async () => {
    await awaiting('gus');
    const held = holdNext(controller, 'get');
    controller.mailboxWatch.informer.setResourceVersion(''); // as after a 410: list again, then watch
    controller.mailboxWatch.informer.restartWatch();
    await held.reached;
    assert.deepEqual(await send('gus', 'lead.1.0', 'sent before the relist'), { result: 'sent' });
    held.release();
    assert.match(await promptOf('gus-ep-2'), /sent before the relist/);
    assert.equal(clock.now().getTime(), t0);
  });
});
