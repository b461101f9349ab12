// Outputs on the real kube-apiserver, the real runner in each episode "pod" (FakeKubelet): a step's outputs
// (final answer and $EPISODIC_OUTPUTS inside the pod) come back in the termination message, land in
// status.outputs, status.steps[].outputs and the AgentEpisode, and the next step's promptFile (rendered by
// the runner) reads them; a dependent task's inline prompt (rendered by the controller) reads its
// dependency's; an unknown reference is named in that episode's record; 4 KiB of outputs beside a long
// message come back within the termination message, the ones left out named.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const HOSTILE = '$(rm -rf /) `id` {{task}} {{steps.plan.outputs.FILES}}';

describe('cluster controller: outputs', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
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
  withController('ctl-outputs', {}, (f) => ({ ns, client, kubelet } = f));

  const records = async (task: string): Promise<any[]> => {
    const list = JSON.parse(await kubectl(['get', 'ae', '-n', ns, '-l', `episodic.dev/task=${task}`, '-o', 'json']));
    return (list.items as any[]).map((i) => i.record).sort((a, b) => a.number - b.number);
  };
  const envOf = (pod: any): Record<string, string> =>
    Object.fromEntries(pod.spec.containers[0].env.map((e: any) => [e.name, e.value]));

  it('a step publishes in its pod, the next step reads them in a promptFile the runner renders', async () => {
    const record = path.join(tmpdir(), `episodic-outputs-${Date.now()}.jsonl`);
    const spec = fakeClaudeSpec(
      {
        prompt: undefined,
        steps: [
          { name: 'plan', prompt: 'Plan it.', completion: { promise: 'PLANNED' } },
          { name: 'build', promptFile: 'BUILD.md', completion: { promise: 'BUILT' } },
        ],
      },
      { env: [{ name: 'FAKE_AGENT_RECORD', value: record }] },
    );
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'duo', spec) });

    const planned = await kubelet.runEpisode(await waitForPod(client, ns, 'duo-ep-1'), {
      env: {
        FAKE_AGENT_MODE: 'success',
        FAKE_AGENT_PROMISE: 'PLANNED',
        FAKE_AGENT_TEXT: `Planned. <output name="FILES">src/a.ts</output> <output name="EVIL">${HOSTILE}</output>`,
        FAKE_AGENT_OUTPUTS: 'ORDER=a then b\nbad-key=x\n',
      },
    });
    assert.equal(planned.exitCode, 0, planned.message);

    const second = await waitForPod(client, ns, 'duo-ep-2');
    const config = EpisodeConfigSchema.parse(JSON.parse(envOf(second).EPISODIC_EPISODE_CONFIG));
    const planOutputs = { FILES: 'src/a.ts', EVIL: HOSTILE, ORDER: 'a then b' };
    assert.deepEqual(config.outputs?.steps?.plan, planOutputs, 'a promptFile may read them: they travel in the config');
    const built = await kubelet.runEpisode(second, {
      env: { FAKE_AGENT_MODE: 'success', FAKE_AGENT_PROMISE: 'BUILT' },
      files: {
        'BUILD.md':
          'Build {{steps.plan.outputs.FILES}} in {{steps.plan.outputs.ORDER}}; {{steps.plan.outputs.EVIL}}; [{{steps.plan.outputs.NOPE}}]',
      },
    });
    assert.equal(built.exitCode, 0, built.message);

    const done = await waitForTask(client, ns, 'duo', (s) => s.phase === 'Succeeded');
    assert.deepEqual(done.status?.steps?.[0].outputs, planOutputs);
    assert.deepEqual(done.status?.outputs, planOutputs);
    const runs = (await readFile(record, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(runs[1].stdin, `Build src/a.ts in a then b; ${HOSTILE}; []`);
    const [planRecord, buildRecord] = await waitFor('both records', async () => {
      const list = await records('duo');
      return list.length === 2 ? list : undefined;
    });
    assert.deepEqual(planRecord.outputs, planOutputs);
    assert.match(planRecord.outputsNote, /^outputs dropped: "bad-key" \(not a C identifier\)$/);
    assert.equal(buildRecord.outputsNote, 'unknown outputs rendered empty: steps.plan.outputs.NOPE');
  });

  it('a dependent task reads its dependency outputs in an inline prompt; 4 KiB of outputs fit the termination message', async () => {
    await kubectl(['apply', '-f', '-'], {
      input: agentTaskManifest(ns, 'api', fakeClaudeSpec({ prompt: 'Build the API.' })),
    });
    const client2 = fakeClaudeSpec({
      dependsOn: ['api'],
      prompt: 'Call {{tasks.api.outputs.URL}}; {{tasks.api.outputs.EVIL}}; [{{tasks.api.outputs.NOPE}}]',
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'client', client2) });

    // 16 keys of 250 bytes (4 KiB, the most an episode may publish) and a long final answer.
    const big = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`K${i}`, `${i}`.padEnd(250, 'v')]));
    const published = { URL: 'http://api.local:8080', EVIL: HOSTILE, ...big };
    const api = await kubelet.runEpisode(await waitForPod(client, ns, 'api-ep-1'), {
      env: {
        FAKE_AGENT_MODE: 'success',
        FAKE_AGENT_TEXT: 'x'.repeat(3000),
        FAKE_AGENT_OUTPUTS: JSON.stringify(published),
      },
    });
    assert.equal(api.exitCode, 0, api.message);
    assert.ok(Buffer.byteLength(api.message) <= 4096, `${Buffer.byteLength(api.message)} bytes`);
    const apiDone = await waitForTask(client, ns, 'api', (s) => s.phase === 'Succeeded');
    const kept = apiDone.status?.outputs ?? {};
    assert.equal(kept.URL, published.URL, 'the first published are kept');
    assert.equal(kept.EVIL, HOSTILE);
    const left = Object.keys(published).filter((k) => !(k in kept));
    assert.ok(left.length > 0, 'some were left out for room');
    for (const k of Object.keys(kept)) assert.equal(kept[k], (published as Record<string, string>)[k], 'kept whole');
    const [apiRecord] = await waitFor('the api record', async () =>
      (await records('api')).length === 1 ? records('api') : undefined,
    );
    assert.match(apiRecord.outputsNote, new RegExp(`left out of the termination message: ${left.join(', ')}$`));
    assert.ok(apiRecord.message.length >= 200, 'the message keeps its head');

    const pod = await waitForPod(client, ns, 'client-ep-1');
    assert.equal(envOf(pod).EPISODIC_PROMPT, `Call http://api.local:8080; ${HOSTILE}; []`);
    const ran = await kubelet.runEpisode(pod, { env: { FAKE_AGENT_MODE: 'success' } });
    assert.equal(ran.exitCode, 0, ran.message);
    const [clientRecord] = await waitFor('the client record', async () =>
      (await records('client')).length === 1 ? records('client') : undefined,
    );
    assert.equal(clientRecord.outputsNote, 'unknown outputs rendered empty: tasks.api.outputs.NOPE');
  });
});
