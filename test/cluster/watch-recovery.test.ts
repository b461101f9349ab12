// Watches must survive what real networks and API servers do to them. The controller talks to the API
// server through a TCP proxy in this test, which can reset every connection (errors) or stop forwarding
// on the open ones while keeping them open (a silently dead connection: only a watchdog notices). A 410
// Gone comes from the real API server, by resuming a watch from a resourceVersion it no longer has.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { proxiedKubeConfig } from '../support/chaos-proxy.ts';
import type { ChaosProxy } from '../support/chaos-proxy.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  startController,
  testClient,
  waitForPod,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const skip = skipCluster;

async function restarts(controller: ClusterController, resource: string, cause: string): Promise<number> {
  const metric = await controller.metrics.watchRestarts.get();
  return metric.values.find((v) => v.labels.resource === resource && v.labels.cause === cause)?.value ?? 0;
}

/** Resolves when the controller opens its next watch of `resource`: the one before it has ended by then. */
function nextWatch(controller: ClusterController, resource: string): Promise<void> {
  const client = controller.client;
  const watch = client.watch.bind(client);
  return new Promise((resolve) => {
    client.watch = (path, query, onEvent) => {
      if (path.endsWith(`/${resource}`)) {
        Reflect.deleteProperty(client, 'watch'); // the class's own method again
        resolve();
      }
      return watch(path, query, onEvent);
    };
  });
}

describe('cluster controller: watch recovery', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let controller: ClusterController;
  let proxy: ChaosProxy;
  const apply = (name: string) =>
    kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, fakeClaudeSpec()) });

  before(
    async () => {
      const cluster = await clusterWithCrd();
      ns = await createNamespace('ctl-watch');
      client = await testClient(cluster);
      let kubeConfig: KubeConfig;
      ({ proxy, kubeConfig } = await proxiedKubeConfig(cluster));
      // Watches end normally every 2-4 s; only a watch silent for 6 s is dead.
      controller = await startController(cluster, {
        kubeConfig,
        namespace: ns,
        watchTimeoutSeconds: 2,
        watchdogMs: 6_000,
        requestTimeoutMs: 5_000,
      });
    },
    { timeout: 90 * 60_000 },
  );

  after(async () => {
    await controller?.stop();
    proxy?.close();
    client?.close();
  });

  it('reconciles through the proxy; normal watch ends are not restarts', async () => {
    await apply('before');
    await waitForPod(client, ns, 'before-ep-1');
    await nextWatch(controller, 'agenttasks'); // the watch before it ended: a server-side timeout, in 2-4 s
    assert.equal(await restarts(controller, 'agenttasks', 'silent'), 0);
    assert.equal(await restarts(controller, 'agenttasks', 'error'), 0);
  });

  it('connections reset mid-stream → the watches restart with backoff and events flow again', async () => {
    assert.ok(proxy.reset() >= 2, 'both watches were open');
    await waitFor(
      'error restarts counted',
      async () =>
        (await restarts(controller, 'agenttasks', 'error')) >= 1 && (await restarts(controller, 'pods', 'error')) >= 1,
    );
    await apply('after-reset');
    await waitForPod(client, ns, 'after-reset-ep-1', 15_000);
  });

  it('a watch that goes silent without closing → the watchdog restarts it', async () => {
    proxy.freeze();
    await waitFor(
      'silent restart counted',
      async () => (await restarts(controller, 'agenttasks', 'silent')) >= 1,
      15_000,
    );
    await apply('after-freeze');
    await waitForPod(client, ns, 'after-freeze-ep-1', 15_000);
  });

  it('410 Gone from the API server → relist, and nothing is missed', async () => {
    const before = await restarts(controller, 'agenttasks', 'gone');
    // Resume from a resourceVersion the API server compacted away long ago.
    controller.tasks.setResourceVersion('1');
    controller.tasks.restartWatch();
    await waitFor('gone restart counted', async () => (await restarts(controller, 'agenttasks', 'gone')) > before);
    await apply('after-gone');
    await waitForPod(client, ns, 'after-gone-ep-1');
    assert.ok(controller.ready());
  });
});
