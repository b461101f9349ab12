// Exactly once across a kill -9 on a cluster: the controller process dies while an episode pod runs; the pod
// ends with its ops in the termination message while no controller runs; the restarted controller applies
// the push and the set once (ConfigMap marker, stack depth) and the task goes on to StackEmpty.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { withControllerProcesses } from '../support/controller-processes.ts';
import type { ProcessFixture } from '../support/controller-processes.ts';
import { agentTaskManifest, type FakeKubelet, NODE, waitForPod, waitForTask } from '../support/kubelet.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const OPS_AGENT = path.resolve(import.meta.dirname, '../agents/ops-agent.mjs');
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;

describe('cluster controller: agent ops across a kill -9', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let start: ProcessFixture['start'];
  let ns: string;
  withControllerProcesses('ctl-ops-kill', (f) => ({ ns, client, kubelet, start } = f));

  it('ops of a pod that ended while no controller ran are applied once by the next one', async () => {
    const first = await start();
    const plan = ['plan', op({ op: 'push', frames: ['after: {{bb.k}}'] }), op({ op: 'set', key: 'k', value: 'v1' })];
    const spec = {
      stack: [plan.join('\n'), 'final'],
      agent: { image: 'ghcr.io/example/agent:1', command: [NODE, OPS_AGENT], output: 'text' },
      limits: { maxEpisodes: 6, episodeTimeoutSeconds: 600 },
    };
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'killed', spec) });
    const pod = await waitForPod(client, ns, 'killed-ep-1');
    assert.equal(await first.kill('SIGKILL'), 'SIGKILL');
    assert.equal((await kubelet.runEpisode(pod)).exitCode, 0, 'the pod ends while no controller runs');

    await start();
    const second = await waitForPod(client, ns, 'killed-ep-2', 30_000);
    const prompt = second.spec.containers[0].env.find((e: { name: string }) => e.name === 'EPISODIC_PROMPT')?.value;
    assert.match(prompt ?? '', /## Task\n\nafter: v1\n/);
    const cm = await client.get<any>(`/api/v1/namespaces/${ns}/configmaps/episodic-blackboard`);
    assert.deepEqual(cm.data, { k: 'v1' });
    assert.equal(cm.metadata.annotations['episodic.dev/applied-ops'], '{"killed":1}');
    assert.equal((await kubelet.runEpisode(second)).exitCode, 0);
    assert.equal((await kubelet.runEpisode(await waitForPod(client, ns, 'killed-ep-3'))).exitCode, 0);
    const done = await waitForTask(client, ns, 'killed', (s) => s.phase === 'Succeeded');
    assert.equal(done.status?.reason, 'StackEmpty');
    assert.equal(done.status?.episodes, 3, 'plan, after (pushed once), final');
  });
});
