// Pipelines across interruptions on the real kube-apiserver, the real runner in each episode "pod"
// (FakeKubelet): a kill -9 of the controller process while a fix episode runs (the pod finishes while no
// controller runs; the restart records it, its gates pass, and the next step starts: no step re-runs, no pod
// is created twice, no output lost); and a task stopped for review in its middle step, resumed by the annotation, goes on in
// that step (the first step never runs again).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EPISODE_CRD_FILE, EPISODE_CRD_NAME } from '../../controller/api/crd.ts';
import type { ClusterController } from '../../controller/cluster/controller.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import type { Cluster } from '../support/cluster.ts';
import { kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import {
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  FakeKubelet,
  fakeClaudeSpec,
  listPods,
  NODE,
  runRunner,
  startController,
  startControllerProcess,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import type { ControllerProcess } from '../support/kubelet.ts';
import type { LooseObject as KubeObject } from '../support/loose-object.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const GATES = path.join(repoRoot, 'test/fixtures/gates');
const promise = (word: string) => ({ env: [{ name: 'FAKE_AGENT_PROMISE', value: word }] });
const stepRows = (task: KubeObject) =>
  task.status?.steps?.map((s: { name: string; phase: string; episodes: number }) => [s.name, s.phase, s.episodes]);

describe('cluster controller: pipelines across a kill -9 and a resume', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let first: ControllerProcess | undefined;
  let restarted: ClusterController | undefined;
  // Finished pods may be cleaned up; none may be beyond the episodes the steps account for.
  const extraPods = async (task: string, last: number) =>
    (await listPods(client, ns, task))
      .map((p) => p.metadata.name)
      .filter((name: string) => Number(name.slice(`${task}-ep-`.length)) > last);
  // The AgentEpisode records, oldest first: the step each episode ran in.
  const recordSteps = async (task: string) =>
    (await client.get<{ items: KubeObject[] }>(`/apis/episodic.dev/v1alpha1/namespaces/${ns}/agentepisodes`)).items
      .map((r) => r.record)
      .filter((r) => r.task === task)
      .sort((a, b) => a.number - b.number)
      .map((r) => [r.number, r.step]);
  // A task's last record is written after the status that says it ended: wait until `count` are there.
  const recordStepsOnce = (task: string, count: number) =>
    waitFor(`${count} episode records of ${task}`, async () => {
      const rows = await recordSteps(task);
      return rows.length >= count ? rows : undefined;
    });

  before(
    async () => {
      cluster = await clusterWithCrd();
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(repoRoot, EPISODE_CRD_FILE)]);
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${EPISODE_CRD_NAME}`]);
      ns = await createNamespace('ctl-pipe-restart');
      client = await testClient(cluster);
      kubelet = new FakeKubelet(client);
    },
    { timeout: 90 * 60_000 },
  );

  after(async () => {
    await first?.kill();
    await restarted?.stop();
    client?.close();
  });

  it('kill -9 during a fix episode: the restart records it, its gates pass, the next step starts; nothing re-runs', async () => {
    first = await startControllerProcess(cluster, ['--namespace', ns]);
    const spec = fakeClaudeSpec({
      prompt: undefined,
      steps: [
        { name: 'plan', prompt: 'Plan it.', agent: promise('PLANNED'), completion: { promise: 'PLANNED' } },
        {
          name: 'implement',
          prompt: 'Implement it.',
          agent: promise('BUILT'),
          completion: { promise: 'BUILT' },
          gates: [{ name: 'test', check: [NODE, path.join(GATES, 'test-gate.mjs')], maxFixEpisodes: 2 }],
        },
        { name: 'review', prompt: 'Review it.', agent: promise('APPROVED'), completion: { promise: 'APPROVED' } },
      ],
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'crashy', spec) });
    const outputs = (o: Record<string, string>) => ({ FAKE_AGENT_OUTPUTS: JSON.stringify(o) });
    await kubelet.runEpisode(await waitForPod(client, ns, 'crashy-ep-1'), {
      env: { FAKE_AGENT_MODE: 'success', ...outputs({ PLAN_ID: 'p-1' }) },
    });
    const built = await kubelet.runEpisode(await waitForPod(client, ns, 'crashy-ep-2'), {
      env: { FAKE_AGENT_MODE: 'success', ...outputs({ BUILD: 'b-2' }) },
    });
    assert.deepEqual(
      JSON.parse(built.message).gates.map((g: { exitCode: number }) => g.exitCode),
      [1],
    );

    // The fix episode's pod runs; the controller dies with it on record.
    const fix = await kubelet.setRunning(await waitForPod(client, ns, 'crashy-ep-3'));
    const fixing = await waitForTask(client, ns, 'crashy', (s) => s.currentEpisode?.number === 3);
    assert.deepEqual([fixing.status.steps[1].gate.name, fixing.status.steps[1].gate.fixEpisodes], ['test', 0]);
    assert.deepEqual(fixing.status.outputs, { PLAN_ID: 'p-1', BUILD: 'b-2' });
    assert.equal(await first.kill('SIGKILL'), 'SIGKILL');

    // While no controller runs, the fix episode ends cleanly (no promise) and its gates pass in the pod.
    const fixed = await runRunner(fix, {
      env: { FAKE_AGENT_MODE: '', ...outputs({ FIX: 'f-3' }) },
      files: { '.fake-agent.json': JSON.stringify({ default: { mode: 'continue', writeFiles: { FIXED: 'y' } } }) },
    });
    assert.equal(fixed.exitCode, 0, fixed.message);
    await kubelet.terminate(fix, { exitCode: 0, message: fixed.message });

    restarted = await startController(cluster, { namespace: ns });
    const review = await waitForPod(client, ns, 'crashy-ep-4');
    assert.equal(
      review.spec.containers[0].env.find((e: { name: string }) => e.name === 'EPISODIC_STEP')?.value,
      'review',
    );
    await kubelet.runEpisode(review, { env: { FAKE_AGENT_MODE: 'success' } });
    const done = await waitForTask(client, ns, 'crashy', (s) => s.phase === 'Succeeded');
    assert.deepEqual(stepRows(done), [
      ['plan', 'Succeeded', 1],
      ['implement', 'Succeeded', 2],
      ['review', 'Succeeded', 1],
    ]);
    assert.equal(done.status.steps[1].reason, 'GatesPassed');
    // No output lost: those published before the kill and the one the fix episode published while none ran.
    assert.deepEqual(done.status.outputs, { PLAN_ID: 'p-1', BUILD: 'b-2', FIX: 'f-3' });
    assert.deepEqual(done.status.steps[1].outputs, { BUILD: 'b-2', FIX: 'f-3' });
    assert.equal(done.status.episodes, 4);
    assert.deepEqual(await extraPods('crashy', 4), []);
    const steps = await recordStepsOnce('crashy', 4);
    assert.deepEqual(steps, [
      [1, 'plan'],
      [2, 'implement'],
      [3, 'implement'],
      [4, 'review'],
    ]);
    const records = await client.get<{ items: KubeObject[] }>(
      `/apis/episodic.dev/v1alpha1/namespaces/${ns}/agentepisodes`,
    );
    const fixRecord = records.items.find((r) => r.record.task === 'crashy' && r.record.number === 3)?.record;
    assert.equal(fixRecord?.step, 'implement');
    assert.deepEqual(
      fixRecord?.gates?.map((g: { name: string; exitCode: number }) => `${g.name}:${g.exitCode}`),
      ['test:0'],
    );
  });

  it('a task stopped for review in its middle step resumes there (the annotation); the first step never re-runs', async () => {
    restarted ??= await startController(cluster, { namespace: ns });
    const spec = fakeClaudeSpec({
      prompt: undefined,
      steps: [
        { name: 'plan', prompt: 'Plan it.', agent: promise('PLANNED'), completion: { promise: 'PLANNED' } },
        {
          name: 'implement',
          prompt: 'Implement it.',
          agent: promise('BUILT'),
          completion: { promise: 'BUILT' },
          limits: { maxEpisodes: 1 },
        },
        { name: 'review', prompt: 'Review it.', agent: promise('APPROVED'), completion: { promise: 'APPROVED' } },
      ],
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'halted', spec) });
    await kubelet.runEpisode(await waitForPod(client, ns, 'halted-ep-1'), { env: { FAKE_AGENT_MODE: 'success' } });
    await kubelet.runEpisode(await waitForPod(client, ns, 'halted-ep-2'), { env: { FAKE_AGENT_MODE: 'continue' } });
    const held = await waitForTask(client, ns, 'halted', (s) => s.phase === 'NeedsReview');
    assert.equal(held.status.reason, 'MaxEpisodesReached');
    assert.match(held.status.message, /implement/);
    assert.deepEqual(stepRows(held), [
      ['plan', 'Succeeded', 1],
      ['implement', 'NeedsReview', 1],
      ['review', 'Pending', 0],
    ]);

    await kubectl([
      'annotate',
      'at',
      'halted',
      '-n',
      ns,
      'episodic.dev/resume=tok-mid',
      'episodic.dev/resume-episodes=1',
      '--overwrite',
    ]);
    const again = await waitForPod(client, ns, 'halted-ep-3');
    const env = Object.fromEntries(
      again.spec.containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]),
    );
    assert.deepEqual([env.EPISODIC_STEP, env.EPISODIC_STEP_INDEX], ['implement', '2']);
    await kubelet.runEpisode(again, { env: { FAKE_AGENT_MODE: 'success' } });
    await kubelet.runEpisode(await waitForPod(client, ns, 'halted-ep-4'), { env: { FAKE_AGENT_MODE: 'success' } });
    const done = await waitForTask(client, ns, 'halted', (s) => s.phase === 'Succeeded');
    assert.deepEqual(stepRows(done), [
      ['plan', 'Succeeded', 1],
      ['implement', 'Succeeded', 2],
      ['review', 'Succeeded', 1],
    ]);
    assert.equal(done.status.episodes, 4);
    assert.deepEqual(await extraPods('halted', 4), []);
    const halted = await recordStepsOnce('halted', 4);
    assert.deepEqual(halted, [
      [1, 'plan'],
      [2, 'implement'],
      [3, 'implement'],
      [4, 'review'],
    ]);
  });
});
