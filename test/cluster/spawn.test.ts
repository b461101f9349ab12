// Spawned children and mailboxes on the real API server with the controller running: a child is an
// AgentTask owned by its parent (kubectl shows the ownerReference), deleting the parent deletes it and its
// episode pod (no garbage collector runs here: the controller does it), and `episodic send --kubeconfig`
// fills the task's mailbox ConfigMap, which goes with the task.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { mailboxName } from '../../controller/sinks/cluster/mailboxes.ts';
import { KubeCreatedTasks } from '../../controller/sources/cluster/created-tasks.ts';
import type { Cluster } from '../support/cluster.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  fakeClaudeSpec,
  getTask,
  listPods,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { runCli } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

describe('cluster controller: spawned children and mailboxes', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let cluster: Cluster;
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  const apply = (name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });
  withController('ctl-spawn', {}, (f) => ({ cluster, ns, client, kubelet } = f));

  it('deleting the parent deletes its running child and the child’s pod', async () => {
    await apply('boss', fakeClaudeSpec());
    await kubelet.setRunning(await waitForPod(client, ns, 'boss-ep-1'));
    const boss = await waitFor('boss on record', () => getTask(client, ns, 'boss'));
    const owner = { kind: 'AgentTask' as const, namespace: ns, name: 'boss', uid: boss.metadata.uid };
    const made = await new KubeCreatedTasks(client).create(owner, 'boss-a', fakeClaudeSpec(), {
      'episodic.dev/depth': '1',
    });
    assert.deepEqual(made, { result: 'created' });
    await kubelet.setRunning(await waitForPod(client, ns, 'boss-a-ep-1'));
    await waitForTask(client, ns, 'boss-a', (s) => s.phase === 'Running');

    const owners = await kubectl([
      'get',
      'at',
      'boss-a',
      '-n',
      ns,
      '-o',
      'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}',
    ]);
    assert.equal(owners.trim(), 'AgentTask/boss');
    const listed = await kubectl(['get', 'at', '-n', ns, '-l', 'episodic.dev/parent=boss', '-o', 'name']);
    assert.equal(listed.trim(), 'agenttask.episodic.dev/boss-a');

    await kubectl(['delete', 'at', 'boss', '-n', ns, '--wait=false']);
    await waitFor('the child gone', async () => (await getTask(client, ns, 'boss-a')) === undefined, 30_000);
    await waitFor('the parent gone', async () => (await getTask(client, ns, 'boss')) === undefined, 30_000);
    await waitFor(
      'their pods gone',
      async () => (await listPods(client, ns)).filter((p) => p.metadata.name.startsWith('boss')).length === 0,
    );
  });

  it('episodic send --kubeconfig: into the mailbox ConfigMap; deleting the task deletes it', async () => {
    await apply('bob', fakeClaudeSpec());
    const sent = await runCli([
      'send',
      'bob',
      'hello bob',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '-n',
      ns,
      '--from',
      'alice',
    ]);
    assert.equal(sent.code, 0, sent.stderr);
    const cm = await kubectl(['get', 'configmap', mailboxName('bob'), '-n', ns, '-o', 'json']);
    const data = Object.values((JSON.parse(cm) as { data: Record<string, string> }).data).map((v) => JSON.parse(v));
    assert.deepEqual(
      data.map((m) => [m.from, m.text]),
      [['alice', 'hello bob']],
    );
    const missing = await runCli(['send', 'nobody', 'x', '--kubeconfig', cluster.kubeconfigPath, '-n', ns]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /AgentTask .*\/nobody not found/);

    await kubectl(['delete', 'at', 'bob', '-n', ns, '--wait=false']);
    await waitFor(
      'the mailbox gone',
      async () => {
        const got = await kubectl([
          'get',
          'configmap',
          mailboxName('bob'),
          '-n',
          ns,
          '--ignore-not-found',
          '-o',
          'name',
        ]);
        return got.trim() === '';
      },
      30_000,
    );
  });

  const SUCCESS = JSON.stringify({ exitCode: 0, completion: 'promise', message: 'done' });
  const CONTINUE = JSON.stringify({ exitCode: 0, message: 'more to do' });
  const finish = async (pod: string, message: string) =>
    kubelet.terminate(await kubelet.setRunning(await waitForPod(client, ns, pod)), { exitCode: 0, message });
  const promptOf = async (pod: string) =>
    (await waitForPod(client, ns, pod)).spec?.containers?.[0]?.env?.find(
      (e: { name: string }) => e.name === 'EPISODIC_PROMPT',
    )?.value ?? '';

  it('a parent waits for its child (WaitingForChildren); its next pod’s prompt has {{children}}', async () => {
    await apply('lead', fakeClaudeSpec({ prompt: 'Collect:\n{{children}}' }));
    await waitForPod(client, ns, 'lead-ep-1');
    const lead = await waitFor('lead on record', () => getTask(client, ns, 'lead'));
    const owner = { kind: 'AgentTask' as const, namespace: ns, name: 'lead', uid: lead.metadata.uid };
    await new KubeCreatedTasks(client).create(owner, 'lead-a', fakeClaudeSpec({ prompt: 'part a' }));
    await finish('lead-ep-1', CONTINUE);
    const waiting = await waitForTask(client, ns, 'lead', (s) => s.reason === 'WaitingForChildren');
    assert.equal(waiting.status?.phase, 'Waiting');
    await finish('lead-a-ep-1', SUCCESS);
    assert.match(await promptOf('lead-ep-2'), /Collect:\n- lead-a: Succeeded\n {2}last message: done/);
  });

  it('wake: onMessage on a cluster: AwaitingMessage until episodic send; {{messages}}; acknowledged after', async () => {
    await apply('ann', fakeClaudeSpec({ prompt: 'Inbox:\n{{messages}}', wake: 'onMessage' }));
    await finish('ann-ep-1', CONTINUE);
    await waitForTask(client, ns, 'ann', (s) => s.reason === 'AwaitingMessage');
    const sent = await runCli([
      'send',
      'ann',
      'hello ann',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '-n',
      ns,
      '--from',
      'bob',
    ]);
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(await promptOf('ann-ep-2'), /Inbox:\nfrom bob at \S+:\nhello ann/);
    await finish('ann-ep-2', SUCCESS);
    await waitForTask(client, ns, 'ann', (s) => s.phase === 'Succeeded');
    await waitFor('the message acknowledged', async () => {
      const cm = JSON.parse(await kubectl(['get', 'configmap', mailboxName('ann'), '-n', ns, '-o', 'json'])) as {
        data?: object;
      };
      return Object.keys(cm.data ?? {}).length === 0;
    });
  });

  it('spawn and send through the termination message: an owned child, a message, hostile ops rejected', async () => {
    await apply('chief', fakeClaudeSpec({ limits: { maxEpisodes: 5, maxChildren: 1 } }));
    await apply('peer', fakeClaudeSpec({ prompt: 'Inbox:\n{{messages}}', wake: 'onMessage' }));
    const ops = [
      { op: 'spawn', name: 'rich', prompt: 'x', limits: { maxEpisodes: 100 } },
      { op: 'spawn', name: 'w', prompt: 'work' },
      { op: 'spawn', name: 'x', prompt: 'one too many' },
      { op: 'send', to: 'peer', message: 'from the chief' },
    ];
    await finish('chief-ep-1', JSON.stringify({ exitCode: 0, message: 'planned', ops }));
    const child = await waitFor('the child', () => getTask(client, ns, 'chief-w'));
    assert.equal(child.metadata.ownerReferences?.[0]?.name, 'chief');
    assert.equal(child.metadata.labels?.['episodic.dev/parent'], 'chief');
    const events = await waitFor('the OpsRejected event', async () => {
      const list = JSON.parse(await kubectl(['get', 'events', '-n', ns, '-o', 'json'])) as {
        items: Array<{ reason: string; message: string; involvedObject: { name: string } }>;
      };
      return list.items.find((e) => e.reason === 'OpsRejected' && e.involvedObject.name === 'chief')?.message;
    });
    assert.match(events, /maxChildren 1 reached/);
    assert.match(events, /maxEpisodes 100 is above the parent's 5/);
    // The status and the AgentEpisode say which ops were refused while applying, and why (issue 28).
    const given = ['spawn rich (rejected)', 'spawn w', 'spawn x (rejected)', 'send peer'];
    const why = /^spawn rich: limits.maxEpisodes 100 is above the parent's 5; spawn x: maxChildren 1 reached$/;
    const chief = await waitForTask(client, ns, 'chief', (st) => st.lastEpisode?.opsRejected !== undefined);
    const last = (chief.status as { lastEpisode?: { ops?: string[]; opsRejected?: string } }).lastEpisode;
    assert.deepEqual(last?.ops, given);
    assert.match(last?.opsRejected ?? '', why);
    const record = await waitFor('the AgentEpisode', async () => {
      const out = await kubectl(['get', 'agentepisodes', 'chief-ep-1', '-n', ns, '-o', 'json']).catch(() => '');
      return out ? (JSON.parse(out) as { record: { ops?: string[]; opsRejected?: string } }).record : undefined;
    });
    assert.deepEqual(record.ops, given);
    assert.match(record.opsRejected ?? '', why);
    assert.equal(await getTask(client, ns, 'chief-x'), undefined);
    const cm = JSON.parse(await kubectl(['get', 'configmap', mailboxName('peer'), '-n', ns, '-o', 'json'])) as {
      data: Record<string, string>;
    };
    assert.deepEqual(Object.keys(cm.data), ['chief.1.0']);
  });
});
