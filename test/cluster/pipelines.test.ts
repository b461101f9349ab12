// A two-step pipeline on the real kube-apiserver, the real runner in each episode "pod" (FakeKubelet): the
// pods of each step carry the step's command, env, completion and limits; EPISODIC_STEP reaches the agent;
// the runner renders {{step.name}} in a promptFile; status.step, status.steps and `kubectl get at` follow.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { EpisodeConfigSchema } from '../../controller/api/episode-config.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  FAKE_CLAUDE,
  fakeClaudeSpec,
  NODE,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';

function containerOf(pod: any): { command: string[]; env: Record<string, string> } {
  const c = pod.spec.containers[0];
  return { command: c.command, env: Object.fromEntries(c.env.map((e: any) => [e.name, e.value])) };
}

describe('cluster controller: pipelines', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-pipelines', {}, (f) => ({ ns, client, kubelet } = f));

  it('a two-step task: each step gets its own pod command, env, promise and timeout; the task succeeds after both', async () => {
    const record = path.join(tmpdir(), `episodic-pipeline-${Date.now()}.jsonl`);
    const spec = fakeClaudeSpec(
      {
        prompt: undefined,
        steps: [
          {
            name: 'plan',
            prompt: 'Plan it ({{step.name}}, step {{step.index}}).',
            agent: { env: [{ name: 'FAKE_AGENT_PROMISE', value: 'PLANNED' }] },
            completion: { promise: 'PLANNED' },
          },
          {
            name: 'build',
            promptFile: 'BUILD.md',
            agent: {
              command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'json'],
              env: [{ name: 'FAKE_AGENT_PROMISE', value: 'BUILT' }],
            },
            completion: { promise: 'BUILT' },
            limits: { episodeTimeoutSeconds: 300 },
          },
        ],
      },
      { env: [{ name: 'FAKE_AGENT_RECORD', value: record }] },
    );
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'duo', spec) });

    const first = await waitForPod(client, ns, 'duo-ep-1');
    const plan = containerOf(first);
    assert.deepEqual(plan.command.slice(-2), [FAKE_CLAUDE, '-p']);
    assert.equal(plan.env.EPISODIC_STEP, 'plan');
    assert.equal(plan.env.EPISODIC_STEP_INDEX, '1');
    assert.equal(plan.env.FAKE_AGENT_PROMISE, 'PLANNED');
    assert.equal(plan.env.FAKE_AGENT_RECORD, record, "the task's env in every step");
    assert.equal(plan.env.EPISODIC_PROMPT, 'Plan it (plan, step 1).');
    assert.equal(EpisodeConfigSchema.parse(JSON.parse(plan.env.EPISODIC_EPISODE_CONFIG)).completion.promise, 'PLANNED');
    assert.equal(first.spec.activeDeadlineSeconds, 600);
    const running = await waitForTask(client, ns, 'duo', (s) => s.phase === 'Running');
    assert.deepEqual(running.status?.step, { index: 1, name: 'plan', summary: '1/2 plan', generation: 1 });

    // The agent prints <promise>PLANNED</promise> (its pod's env): plan's own promise, so build starts.
    const planned = await kubelet.runEpisode(first, { env: { FAKE_AGENT_MODE: 'success' } });
    assert.equal(planned.exitCode, 0, planned.message);

    const second = await waitForPod(client, ns, 'duo-ep-2');
    const build = containerOf(second);
    assert.deepEqual(build.command.slice(-3), ['-p', '--output-format', 'json']);
    assert.equal(build.env.EPISODIC_STEP, 'build');
    assert.equal(build.env.EPISODIC_STEP_INDEX, '2');
    assert.equal(build.env.FAKE_AGENT_PROMISE, 'BUILT');
    assert.equal(build.env.EPISODIC_PROMPT, undefined, 'a promptFile is rendered by the runner');
    const config = EpisodeConfigSchema.parse(JSON.parse(build.env.EPISODIC_EPISODE_CONFIG));
    assert.deepEqual(
      [config.promptFile, config.step, config.completion.promise],
      ['BUILD.md', { name: 'build', index: 2 }, 'BUILT'],
    );
    assert.equal(second.spec.activeDeadlineSeconds, 300);
    const inBuild = await waitForTask(client, ns, 'duo', (s) => s.step?.index === 2 && s.phase === 'Running');
    assert.deepEqual(
      inBuild.status?.steps?.map((s: any) => [s.name, s.phase, s.episodes]),
      [
        ['plan', 'Succeeded', 1],
        ['build', 'Running', 1],
      ],
    );
    assert.match(
      await kubectl(['get', 'at', 'duo', '-n', ns]),
      /REASON\s+STEP\s+PROGRESS[\s\S]*EpisodeRunning\s+2\/2 build/,
    );

    const built = await kubelet.runEpisode(second, {
      env: { FAKE_AGENT_MODE: 'success' },
      files: { 'BUILD.md': 'Build it as the {{step.name}} step, #{{step.index}}.' },
    });
    assert.equal(built.exitCode, 0, built.message);
    const done = await waitForTask(client, ns, 'duo', (s) => s.phase === 'Succeeded');
    assert.equal(done.status?.reason, 'PromiseDetected');
    assert.match(done.status?.message ?? '', /^step 2\/2 build: episode 2 finished the task/);
    assert.deepEqual(
      done.status?.steps?.map((s: any) => [s.name, s.phase]),
      [
        ['plan', 'Succeeded'],
        ['build', 'Succeeded'],
      ],
    );
    assert.equal(done.status?.lastEpisode?.step, 'build');

    // What each agent was given, as it recorded it inside the "pod".
    const runs = (await readFile(record, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      runs.map((r) => [r.env.EPISODIC_STEP, r.env.EPISODIC_STEP_INDEX]),
      [
        ['plan', '1'],
        ['build', '2'],
      ],
    );
    assert.match(runs[1].stdin, /Build it as the build step, #2\./);
  });
});
