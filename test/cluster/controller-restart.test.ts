// kill -9 of the controller process with episodes in flight, then a restart: every running pod is
// adopted, pods that finished meanwhile are recorded, and no episode number is ever created twice.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { LooseObject as KubeObject } from '../support/loose-object.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import type { Cluster } from '../support/cluster.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  FakeKubelet,
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  getTask,
  listPods,
  startController,
  startControllerProcess,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import type { ControllerProcess } from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

const skip = skipCluster;
const SUCCESS = JSON.stringify({ exitCode: 0, completion: 'promise', message: 'done' });
const TASKS = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];

describe('cluster controller: kill -9 and restart', { skip, timeout: SUITE_HANG_GUARD_MS }, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  const running: ControllerProcess[] = [];
  let restarted: ClusterController | undefined;
  const start = async (...args: string[]) => {
    const p = await startControllerProcess(cluster, ['--namespace', ns, ...args]);
    running.push(p);
    return p;
  };
  const podNames = async () => (await listPods(client, ns)).map((p) => p.metadata.name).sort();

  before(
    async () => {
      cluster = await clusterWithCrd();
      ns = await createNamespace('ctl-restart');
      client = await testClient(cluster);
      kubelet = new FakeKubelet(client);
    },
    { timeout: 90 * 60_000 },
  );

  after(async () => {
    await restarted?.stop();
    await Promise.all(running.map((p) => p.kill()));
    client?.close();
  });

  it('adopts running pods, records pods that finished while it was down, never duplicates an episode', async (t) => {
    // A slow client limit makes status writes lag behind pod creates, so the kill lands in between.
    const first = await start('--kube-api-qps', '4', '--kube-api-burst', '1');
    const manifests = TASKS.map((name) => agentTaskManifest(ns, name, fakeClaudeSpec())).join('\n');
    await kubectl(['apply', '-f', '-'], { input: manifests });
    await waitFor('six episode pods', async () => (await podNames()).length === TASKS.length, 20_000);
    assert.equal(await first.kill('SIGKILL'), 'SIGKILL');
    const unrecorded = (await Promise.all(TASKS.map((n) => getTask(client, ns, n)))).filter(
      (task) => !task?.status?.currentEpisode,
    ).length;
    t.diagnostic(`${unrecorded} of ${TASKS.length} tasks had a pod but no recorded episode at the kill`);

    // While no controller runs: two episodes finish, the others start running.
    for (const name of ['r1', 'r2'])
      await kubelet.terminate(await kubelet.setRunning(await waitForPod(client, ns, `${name}-ep-1`)), {
        exitCode: 0,
        message: SUCCESS,
      });
    for (const name of ['r3', 'r4']) await kubelet.setRunning(await waitForPod(client, ns, `${name}-ep-1`));

    // The restart runs in this process, so the test can tell when it has reconciled all it found.
    restarted = await startController(cluster, { namespace: ns });
    const adopted: KubeObject[] = [];
    for (const name of ['r1', 'r2'])
      adopted.push(await waitForTask(client, ns, name, (s) => s.phase === 'Succeeded' && s.episodes === 1));
    for (const name of ['r3', 'r4', 'r5', 'r6']) {
      // Adopted pods are named in status too.
      adopted.push(
        await waitForTask(
          client,
          ns,
          name,
          (s) =>
            s.phase === 'Running' &&
            s.currentEpisode?.number === 1 &&
            s.episodes === 1 &&
            s.currentEpisode.podName === `${name}-ep-1`,
        ),
      );
    }
    // Every pass those statuses queued has run (a duplicate pod would exist by now), not a guessed pause.
    await reconciledSince(restarted, adopted);
    assert.deepEqual(
      await podNames(),
      TASKS.map((n) => `${n}-ep-1`),
    );

    for (const name of ['r3', 'r4', 'r5', 'r6'])
      await kubelet.terminate(await waitForPod(client, ns, `${name}-ep-1`), { exitCode: 0, message: SUCCESS });
    for (const name of TASKS) await waitForTask(client, ns, name, (s) => s.phase === 'Succeeded' && s.episodes === 1);
    assert.deepEqual(
      await podNames(),
      TASKS.map((n) => `${n}-ep-1`),
    );
    await restarted.stop();
    restarted = undefined;
  });

  it('a status naming an episode whose pod was never created (crash between the two writes) → interrupted; the number is not reused', async () => {
    for (const p of running) await p.kill();
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'gap', fakeClaudeSpec()) });
    // What the controller writes just before creating episode 2's pod, had it died right then.
    const startedAt = new Date().toISOString();
    const status = {
      phase: 'Running',
      reason: 'EpisodeRunning',
      episodes: 2,
      currentEpisode: { number: 2, startedAt },
      lastEpisode: { number: 1, outcome: 'continue', exitCode: 0 },
    };
    await kubectl([
      'patch',
      'at',
      'gap',
      '-n',
      ns,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ]);

    await start();
    const task = await waitForTask(client, ns, 'gap', (s) => s.lastEpisode?.number === 2);
    assert.equal(task.status?.lastEpisode?.outcome, 'interrupted');
    await waitForPod(client, ns, 'gap-ep-3');
    assert.deepEqual(
      (await listPods(client, ns, 'gap')).map((p) => p.metadata.name),
      ['gap-ep-3'],
    );
  });
});

/** Resolves once the controller's cache holds each task as read (or newer) and every pass that queued has run. */
async function reconciledSince(controller: ClusterController, tasks: KubeObject[]): Promise<void> {
  const rv = (task: KubeObject | undefined) => Number(task?.metadata.resourceVersion ?? 0);
  const key = (task: KubeObject) => `${task.metadata.namespace}/${task.metadata.name}`;
  await waitFor('the controller to see the statuses it wrote', () =>
    tasks.every((task) => rv(controller.tasks.get(key(task))) >= rv(task)),
  );
  await controller.idle();
}
