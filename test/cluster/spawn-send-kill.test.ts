// spawn and send exactly once across a kill -9 of the cluster controller process (real apiserver, the real
// runner in each FakeKubelet "pod"), with the kill inside the application of an ended episode's ops: boss's
// pod ends with two spawns and sends to peer and sink in its termination message; sink's mailbox ConfigMap
// is immutable, so applying fails after the children and peer's message (boss keeps pendingOps, the loop
// retries). peer (wake: onMessage) gets its message in a pod that ends, which acknowledges it, and then a
// person's message. The controller is killed; the next one applies the ops again once the ConfigMap is
// gone: no second child, no second copy of the message in peer's prompts, one message in sink's mailbox.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { mailboxName } from '../../controller/sinks/cluster/mailboxes.ts';
import type { Cluster } from '../support/cluster.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { withControllerProcesses } from '../support/controller-processes.ts';
import type { ProcessFixture } from '../support/controller-processes.ts';
import {
  agentTaskManifest,
  type FakeKubelet,
  getTask,
  listPods,
  NODE,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import { runCli } from '../support/local.ts';
import { KILL_TASKS } from '../support/spawn-send-kill.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const OPS_AGENT = path.resolve(import.meta.dirname, '../agents/ops-agent.mjs');
const promptOf = (pod: any): string =>
  pod.spec.containers[0].env.find((e: { name: string }) => e.name === 'EPISODIC_PROMPT')?.value ?? '';

describe('cluster controller: spawn and send across a kill -9', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let start: ProcessFixture['start'];
  withControllerProcesses('ctl-spawn-kill', (f) => ({ cluster, ns, client, kubelet, start } = f));

  const apply = (name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '-f', '-'], {
      input: agentTaskManifest(ns, name, {
        agent: { image: 'ghcr.io/example/agent:1', command: [NODE, OPS_AGENT], output: 'text' },
        backoff: { initialSeconds: 0.2, factor: 1, maxSeconds: 0.5 },
        limits: { maxEpisodes: 6, episodeTimeoutSeconds: 600 },
        ...spec,
      }),
    });
  const run = async (pod: string) => {
    const got = await waitForPod(client, ns, pod, 30_000);
    assert.equal((await kubelet.runEpisode(got)).exitCode, 0, pod);
    return promptOf(got);
  };
  const mailbox = async (task: string) =>
    (await client.get<any>(`/api/v1/namespaces/${ns}/configmaps/${mailboxName(task)}`)).data ?? {};

  it('one child per spawn and one copy of each message, with the controller killed while they are applied', async () => {
    const first = await start();
    const sinkBox = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: mailboxName('sink') }, immutable: true };
    await client.create(`/api/v1/namespaces/${ns}/configmaps`, sinkBox);
    for (const name of ['boss', 'peer', 'sink'] as const) await apply(name, KILL_TASKS[name]);
    const peerPrompts = [await run('peer-ep-1'), await run('sink-ep-1'), await run('boss-ep-1')].slice(0, 1);

    await waitFor('applying boss’s ops fails at sink', () =>
      first.logs.some((l) => l.task === 'boss' && /reconcile failed/.test(l.msg)),
    );
    peerPrompts.push(await run('peer-ep-2'));
    await waitFor('peer acknowledged hello peer', async () => Object.keys(await mailbox('peer')).length === 0);
    const poke = await runCli(['send', 'peer', 'poke', '--kubeconfig', cluster.kubeconfigPath, '-n', ns]);
    assert.equal(poke.code, 0, poke.stderr);
    peerPrompts.push(await run('peer-ep-3'));
    await waitFor('peer acknowledged the poke', async () => Object.keys(await mailbox('peer')).length === 0);
    const pending = await waitForTask(client, ns, 'boss', (s) => s.pendingOps?.episode === 1);
    assert.ok(pending, 'the kill comes while boss’s ops are pending');
    assert.ok((await getTask(client, ns, 'boss-a')) && (await getTask(client, ns, 'boss-b')));
    assert.equal(await first.kill('SIGKILL'), 'SIGKILL');

    await client.delete(`/api/v1/namespaces/${ns}/configmaps/${mailboxName('sink')}`);
    await start();
    await run('boss-a-ep-1');
    await run('boss-b-ep-1');
    assert.match(await run('boss-ep-2'), /collect:\n- boss-a: Succeeded/);
    peerPrompts.push(await run('peer-ep-4'));
    await waitForTask(client, ns, 'peer', (s) => s.reason === 'StackEmpty');
    await waitForTask(client, ns, 'boss', (s) => s.reason === 'StackEmpty');

    const children = await kubectl(['get', 'at', '-n', ns, '-l', 'episodic.dev/parent=boss', '-o', 'name']);
    assert.deepEqual(children.trim().split('\n').sort(), [
      'agenttask.episodic.dev/boss-a',
      'agenttask.episodic.dev/boss-b',
    ]);
    const childPods = (await listPods(client, ns)).map((p) => p.metadata.name).filter((n) => /^boss-[ab]-/.test(n));
    assert.deepEqual(childPods.sort(), ['boss-a-ep-1', 'boss-b-ep-1']);
    const count = (needle: string) => peerPrompts.filter((p) => p.includes(needle)).length;
    assert.equal(count('hello peer'), 1, peerPrompts.join('\n---\n'));
    assert.deepEqual([count('poke'), count('bye peer')], [1, 1]);
    assert.deepEqual(Object.keys(await mailbox('sink')), ['boss.1.1']);
  });
});
