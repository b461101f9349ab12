// Gates on the real kube-apiserver, the real runner in each episode "pod" (FakeKubelet): a three-step
// pipeline whose implement step has a lint gate (a formatter, then a check) and a test gate. The runner runs
// the gates in the pod after the agent's claim; the test gate fails, its run travels in the termination
// message, the controller starts a fix episode whose pod carries the gate (config and prompt); the runner runs
// the gates after the fix episode's clean exit, they pass, and the pipeline goes on to review and succeeds.
// Each AgentEpisode records its gate runs. And a step finished by a complete checklist runs its gates as well.
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { EPISODE_CRD_FILE, EPISODE_CRD_NAME } from '../../controller/api/crd.ts';
import { EpisodeConfigSchema } from '../../controller/api/episode-config.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { ensureCluster, kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  fakeClaudeSpec,
  NODE,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import type { LooseObject as KubeObject } from '../support/loose-object.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const GATES = path.join(repoRoot, 'test/fixtures/gates');

function envOf(pod: KubeObject): Record<string, string> {
  return Object.fromEntries(pod.spec.containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]));
}

describe('cluster controller: gates', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  before(
    async () => {
      await ensureCluster();
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', path.join(repoRoot, EPISODE_CRD_FILE)]);
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${EPISODE_CRD_NAME}`]);
    },
    { timeout: 90 * 60_000 },
  );
  withController('ctl-gates', {}, (f) => ({ ns, client, kubelet } = f));

  it('the runner runs the gates in the pod; a failing test gate gets a fix episode, then the pipeline goes on', async () => {
    const promise = (word: string) => ({ env: [{ name: 'FAKE_AGENT_PROMISE', value: word }] });
    const spec = fakeClaudeSpec({
      prompt: undefined,
      steps: [
        { name: 'plan', prompt: 'Plan it.', agent: promise('PLANNED'), completion: { promise: 'PLANNED' } },
        {
          name: 'implement',
          prompt: 'Implement it.',
          agent: promise('BUILT'),
          completion: { promise: 'BUILT' },
          gates: [
            {
              name: 'lint',
              fix: [NODE, path.join(GATES, 'format.mjs')],
              check: [NODE, path.join(GATES, 'lint.mjs')],
            },
            { name: 'test', check: [NODE, path.join(GATES, 'test-gate.mjs')], maxFixEpisodes: 2 },
          ],
        },
        { name: 'review', prompt: 'Review it.', agent: promise('APPROVED'), completion: { promise: 'APPROVED' } },
      ],
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'gated', spec) });

    const planned = await kubelet.runEpisode(await waitForPod(client, ns, 'gated-ep-1'), {
      env: { FAKE_AGENT_MODE: 'success' },
    });
    assert.equal(planned.exitCode, 0, planned.message);

    const implement = await waitForPod(client, ns, 'gated-ep-2');
    const config = EpisodeConfigSchema.parse(JSON.parse(envOf(implement).EPISODIC_EPISODE_CONFIG));
    assert.deepEqual(
      config.gates?.map((g) => g.name),
      ['lint', 'test'],
    );
    assert.equal(config.gate, undefined);
    // The agent writes src.txt in lower case: the lint gate's fix formats it, the test gate fails (no FIXED).
    const built = await kubelet.runEpisode(implement, {
      env: { FAKE_AGENT_MODE: 'success' },
      files: { 'src.txt': 'lower\n' },
    });
    assert.equal(built.exitCode, 0, built.message);
    const result = JSON.parse(built.message);
    assert.deepEqual(
      result.gates.map((g: { name: string; exitCode: number }) => [g.name, g.exitCode]),
      [
        ['lint', 0],
        ['test', 1],
      ],
    );

    const fix = await waitForPod(client, ns, 'gated-ep-3');
    const fixEnv = envOf(fix);
    const fixConfig = EpisodeConfigSchema.parse(JSON.parse(fixEnv.EPISODIC_EPISODE_CONFIG));
    assert.equal(fixConfig.gate?.name, 'test');
    assert.match(fixConfig.gate?.output ?? '', /not ok 2 - adds numbers/);
    assert.match(fixEnv.EPISODIC_PROMPT, /^Implement it\.\n[\s\S]*The gate "test" checked your work and failed/);
    assert.match(fixEnv.EPISODIC_PROMPT, /# fail 1/);
    const fixing = await waitForTask(client, ns, 'gated', (s) => s.steps?.[1]?.gate !== undefined);
    assert.deepEqual([fixing.status?.steps?.[1].gate.name, fixing.status?.steps?.[1].gate.fixEpisodes], ['test', 0]);
    // The fix episode exits 0 without a promise (a script in its workspace): the runner runs the gates anyway.
    const fixed = await kubelet.runEpisode(fix, {
      env: { FAKE_AGENT_MODE: '' },
      files: {
        'src.txt': 'LOWER\n',
        '.fake-agent.json': JSON.stringify({ default: { mode: 'continue', writeFiles: { FIXED: 'y' } } }),
      },
    });
    assert.equal(fixed.exitCode, 0, fixed.message);

    const review = await waitForPod(client, ns, 'gated-ep-4');
    assert.equal(envOf(review).EPISODIC_STEP, 'review');
    assert.doesNotMatch(envOf(review).EPISODIC_PROMPT, /gate/);
    await kubelet.runEpisode(review, { env: { FAKE_AGENT_MODE: 'success' } });
    const done = await waitForTask(client, ns, 'gated', (s) => s.phase === 'Succeeded');
    assert.deepEqual(
      done.status?.steps?.map((s: { name: string; phase: string; reason: string; gate?: unknown }) => [
        s.name,
        s.phase,
        s.reason,
        s.gate,
      ]),
      [
        ['plan', 'Succeeded', 'PromiseDetected', undefined],
        ['implement', 'Succeeded', 'GatesPassed', undefined],
        ['review', 'Succeeded', 'PromiseDetected', undefined],
      ],
    );

    const records = await client.get<{ items: KubeObject[] }>(
      `/apis/episodic.dev/v1alpha1/namespaces/${ns}/agentepisodes`,
    );
    const byNumber = new Map(records.items.map((r) => [r.record.number, r.record]));
    const gateWords = (n: number) =>
      byNumber.get(n)?.gates?.map((g: { name: string; exitCode: number }) => `${g.name}:${g.exitCode}`);
    assert.deepEqual(gateWords(2), ['lint:0', 'test:1']);
    assert.deepEqual(gateWords(3), ['lint:0', 'test:0']);
    assert.equal(gateWords(1), undefined);
    assert.match(byNumber.get(2)?.gates?.[1].output ?? '', /not ok 2/);
  });

  it('a step finished by a complete checklist (no claim): the runner runs its gates too', async () => {
    const spec = fakeClaudeSpec({
      prompt: undefined,
      progress: { checklist: 'PLAN.md' },
      steps: [
        {
          name: 'execute',
          prompt: 'Work through PLAN.md.',
          completion: { checklist: true },
          gates: [{ name: 'test', check: [NODE, path.join(GATES, 'test-gate.mjs')] }],
        },
      ],
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'planned', spec) });
    const ran = await kubelet.runEpisode(await waitForPod(client, ns, 'planned-ep-1'), {
      env: { FAKE_AGENT_MODE: 'continue' },
      files: { 'PLAN.md': '- [x] a\n- [x] b\n', FIXED: 'y' },
    });
    assert.equal(ran.exitCode, 0, ran.message);
    assert.deepEqual(
      JSON.parse(ran.message).gates?.map((g: { name: string; exitCode: number }) => `${g.name}:${g.exitCode}`),
      ['test:0'],
    );
    const done = await waitForTask(client, ns, 'planned', (s) => s.phase === 'Succeeded');
    assert.deepEqual([done.status.steps[0].phase, done.status.steps[0].reason], ['Succeeded', 'ChecklistComplete']);
  });
});
