// A promptFile naming {{bb.KEY}}, {{children}} and {{messages}} on the real API server: the controller reads
// the blackboard ConfigMap, the child's status and the mailbox, hands the pod the rendered values, and the real
// runner (FakeKubelet) renders the workspace's file with them, as `episodic run` does (test/local twin); the
// message is acknowledged once that episode has ended.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { mailboxName } from '../../controller/sinks/cluster/mailboxes.ts';
import { KubeCreatedTasks } from '../../controller/sources/cluster/created-tasks.ts';
import type { Cluster } from '../support/cluster.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  NODE,
  agentTaskManifest,
  fakeClaudeSpec,
  getTask,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { runCli, tempDir } from '../support/local.ts';
import { OPS_PROMPT_FILE, OPS_PROMPT_RENDERED } from '../support/prompt-file-ops.ts';
import { waitFor } from '../support/wait.ts';

const OPS_AGENT = path.resolve(import.meta.dirname, '../agents/ops-agent.mjs');

describe('cluster controller: agent ops placeholders in a promptFile', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-pfops', {}, (f) => ({ cluster, ns, client, kubelet } = f));
  const cli = async (args: string[]) => {
    const res = await runCli([...args, '--kubeconfig', cluster.kubeconfigPath, '-n', ns]);
    assert.equal(res.code, 0, res.stderr);
  };

  it('{{bb.plan}}, {{children}} and {{messages}} render in the pod; the message is acknowledged after', async () => {
    await cli(['blackboard', 'set', 'plan', 'v1']);
    const spec = fakeClaudeSpec(
      { prompt: undefined, promptFile: 'PROMPT.md', completion: { onExitZero: true, minEpisodes: 2 } },
      { command: [NODE, OPS_AGENT], output: 'text' },
    );
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'lead', spec) });
    const first = await waitForPod(client, ns, 'lead-ep-1');
    const lead = await waitFor('lead on record', () => getTask(client, ns, 'lead'));
    const owner = { kind: 'AgentTask' as const, namespace: ns, name: 'lead', uid: lead.metadata.uid };
    await new KubeCreatedTasks(client).create(owner, 'lead-a', fakeClaudeSpec({ prompt: 'part a' }));
    await kubelet.terminate(await kubelet.setRunning(first), { exitCode: 0, message: '{"exitCode":0}' });
    await waitForTask(client, ns, 'lead', (s) => s.reason === 'WaitingForChildren');
    await cli(['send', 'lead', 'hello lead', '--from', 'bob']);
    const child = await kubelet.setRunning(await waitForPod(client, ns, 'lead-a-ep-1'));
    await kubelet.terminate(child, { exitCode: 0, message: '{"exitCode":0,"completion":"promise","message":"done"}' });

    const record = path.join(tempDir(), 'prompts.jsonl');
    const second = await waitForPod(client, ns, 'lead-ep-2');
    const run = await kubelet.runEpisode(second, {
      files: { 'PROMPT.md': OPS_PROMPT_FILE },
      env: { OPS_AGENT_RECORD: record },
    });
    assert.equal(run.exitCode, 0, run.message);
    const { prompt } = JSON.parse(await readFile(record, 'utf8')) as { prompt: string };
    assert.match(prompt, OPS_PROMPT_RENDERED);
    assert.match(prompt, /last message: done\n/);

    await waitForTask(client, ns, 'lead', (s) => s.phase === 'Succeeded');
    await waitFor('the message acknowledged', async () => {
      const cm = JSON.parse(await kubectl(['get', 'configmap', mailboxName('lead'), '-n', ns, '-o', 'json'])) as {
        data?: object;
      };
      return Object.keys(cm.data ?? {}).length === 0;
    });
  });
});
