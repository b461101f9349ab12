// Fan-out on the real API server with the controller and the test kubelet (issue 32 §1): a forEach step's
// items become AgentTasks owned by the parent (ownerReference, the parent label), at most maxConcurrency of
// their pods exist at once, and the step succeeds once every child did.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubeconfigPath, kubectl, skipCluster } from '../support/cluster.ts';
import { runCli } from '../support/local.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  fakeClaudeSpec,
  listPods,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';

describe('cluster controller: fan-out steps', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-fanout', {}, (f) => ({ ns, client, kubelet } = f));

  const SUCCESS = JSON.stringify({ exitCode: 0, completion: 'promise', message: 'done' });
  const episodePods = async () =>
    (await listPods(client, ns)).filter(
      (p) => p.metadata.name.startsWith('fan-each-') && !p.metadata.deletionTimestamp,
    );

  it('three items, maxConcurrency 2: children are AgentTasks owned by the parent, two pods at a time', async () => {
    const spec = fakeClaudeSpec({
      prompt: undefined,
      steps: [{ name: 'each', prompt: 'do {{item}}', forEach: { items: ['a', 'b', 'c'], maxConcurrency: 2 } }],
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'fan', spec) });
    const first = await waitForPod(client, ns, 'fan-each-0-ep-1');
    await waitForPod(client, ns, 'fan-each-1-ep-1');
    const parent = await waitForTask(client, ns, 'fan', (s) => s.reason === 'ForEachRunning');
    assert.equal(parent.status?.steps?.[0]?.forEach?.created, 2);
    assert.equal((await episodePods()).length, 2, 'the third item waits for a free place');

    const owners = await kubectl([
      'get',
      'at',
      '-n',
      ns,
      '-l',
      'episodic.dev/parent=fan',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}:{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}:{.spec.prompt};{end}',
    ]);
    assert.deepEqual(owners.split(';').filter(Boolean).sort(), [
      'fan-each-0:AgentTask/fan:do a',
      'fan-each-1:AgentTask/fan:do b',
    ]);

    await kubelet.terminate(await kubelet.setRunning(first), { exitCode: 0, message: SUCCESS });
    await waitForTask(client, ns, 'fan-each-0', (s) => s.phase === 'Succeeded');
    const third = await waitForPod(client, ns, 'fan-each-2-ep-1');
    assert.ok((await episodePods()).filter((p) => p.status?.phase !== 'Succeeded').length <= 2);
    for (const pod of [await waitForPod(client, ns, 'fan-each-1-ep-1'), third])
      await kubelet.terminate(await kubelet.setRunning(pod), { exitCode: 0, message: SUCCESS });
    const done = await waitForTask(client, ns, 'fan', (s) => s.phase === 'Succeeded');
    assert.deepEqual(done.status?.steps?.[0]?.forEach, { total: 3, created: 3, running: 0, succeeded: 3, failed: 0 });
    assert.match(done.status?.message ?? '', /3 of 3 items succeeded/);
    await waitFor('the children listed', async () => {
      const names = await kubectl(['get', 'at', '-n', ns, '-l', 'episodic.dev/parent=fan', '-o', 'name']);
      return names.trim().split('\n').length === 3;
    });
    // `episodic get fan` on the cluster lists them under their parent, as locally.
    const got = await runCli(['get', 'fan', '--kubeconfig', kubeconfigPath, '-n', ns]);
    assert.equal(got.code, 0, got.stderr);
    const children = got.stdout.slice(got.stdout.indexOf('Children (3):'));
    assert.match(children, /^Children \(3\):\nNAME\s+PHASE\s+EPISODES\s+COST\s+REASON\n/);
    for (const n of [0, 1, 2]) assert.match(children, new RegExp(`^fan-each-${n}\\s+Succeeded\\s+1\\s`, 'm'));
  });
});
