// Agent ops on the real kube-apiserver, the real runner in each episode "pod" (FakeKubelet): the ops come
// back in the termination message; push decomposes spec.stack, set/del write ConfigMap episodic-blackboard
// that {{bb.KEY}} reads in the next pod's prompt, sleep makes the task wait (Sleeping), StackEmpty ends it.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  NODE,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const OPS_AGENT = path.resolve(import.meta.dirname, '../agents/ops-agent.mjs');
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;
const promptOf = (pod: any): string =>
  pod.spec.containers[0].env.find((e: { name: string }) => e.name === 'EPISODIC_PROMPT')?.value ?? '';

describe('cluster controller: agent ops', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-ops', {}, (f) => ({ ns, client, kubelet } = f));

  const board = async () =>
    client.get<any>(`/api/v1/namespaces/${ns}/configmaps/episodic-blackboard`).catch(() => undefined);

  it('the apiserver takes spec.stack instead of prompt, and refuses both', async () => {
    const both = { prompt: 'p', stack: ['a'], agent: { command: ['x'] } };
    await assert.rejects(
      kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'both', both) }),
      /exactly one of prompt or promptFile is required/,
    );
  });

  it('push, set/del ({{bb.KEY}} in the next prompt), sleep and StackEmpty through pods', async () => {
    const partA = ['part A: the plan is {{bb.plan}}', op({ op: 'del', key: 'plan' }), op({ op: 'sleep', seconds: 2 })];
    const plan = [
      'plan the work',
      op({ op: 'push', frames: [partA.join('\n')] }),
      op({ op: 'set', key: 'plan', value: 'v1' }),
      '@raw {"op":"send","to":"../x","message":"sk-SECRET"}',
    ].join('\n');
    const spec = {
      stack: [plan, 'ship it (depth {{stack.depth}})'],
      agent: { image: 'ghcr.io/example/agent:1', command: [NODE, OPS_AGENT], output: 'text' },
      backoff: { initialSeconds: 0.2, factor: 1, maxSeconds: 0.5 },
      limits: { maxEpisodes: 6, episodeTimeoutSeconds: 600 },
    };
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'stacky', spec) });

    const first = await waitForPod(client, ns, 'stacky-ep-1');
    assert.match(promptOf(first), /## Context[\s\S]*1\. ship it \(depth 2\)[\s\S]*## Task\n\nplan the work/);
    const started = await waitForTask(client, ns, 'stacky', (s) => s.phase === 'Running');
    assert.equal(started.status?.stack?.depth, 2);
    assert.equal((await kubelet.runEpisode(first)).exitCode, 0);

    const second = await waitForPod(client, ns, 'stacky-ep-2');
    assert.match(promptOf(second), /## Task\n\npart A: the plan is v1\n/);
    const cm = await board();
    assert.deepEqual(cm?.data, { plan: 'v1' });
    assert.equal(cm?.metadata.annotations['episodic.dev/applied-ops'], '{"stacky":1}');
    const afterFirst = await waitForTask(client, ns, 'stacky', (s) => s.lastEpisode?.number === 1);
    assert.deepEqual(afterFirst.status?.lastEpisode?.ops, ['push 1', 'set plan']);
    assert.match(afterFirst.status?.lastEpisode?.opsRejected ?? '', /line 3: send: to: must be a lowercase DNS label/);
    assert.ok(!JSON.stringify(afterFirst.status).includes('sk-SECRET'));
    assert.equal(afterFirst.status?.pendingOps, undefined);

    assert.equal((await kubelet.runEpisode(second)).exitCode, 0);
    const sleeping = await waitForTask(client, ns, 'stacky', (s) => s.reason === 'Sleeping');
    assert.equal(sleeping.status?.phase, 'Waiting');
    assert.ok(Date.parse(sleeping.status?.nextEpisodeAt ?? '') > Date.now() - 1000);
    const third = await waitForPod(client, ns, 'stacky-ep-3');
    assert.ok(
      Date.parse(third.metadata.creationTimestamp ?? '') >= Date.parse(sleeping.status?.nextEpisodeAt ?? '') - 1000,
    );
    assert.deepEqual((await board())?.data ?? {}, {});
    assert.match(promptOf(third), /## Task\n\nship it \(depth 1\)/);

    assert.equal((await kubelet.runEpisode(third)).exitCode, 0);
    const done = await waitForTask(client, ns, 'stacky', (s) => s.phase === 'Succeeded');
    assert.equal(done.status?.reason, 'StackEmpty');
    assert.equal(done.status?.stack?.depth, 0);
    const events = await kubectl(['get', 'events', '-n', ns, '-o', 'json']);
    assert.match(events, /OpsRejected/);
    assert.ok(!events.includes('sk-SECRET'));
  });
});
