// Best-of-N on the real API server with the controller and the test kubelet (issue 32 §2): the attempts are
// AgentTasks owned by the task, on their own branches, and their pods run at the same time; once all ended
// the evidence order picks the winner (here: all succeeded with the same diff, the cheapest one wins).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  fakeClaudeSpec,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';

describe('cluster controller: best-of-N attempts', { skip: skipCluster, timeout: 90_000 }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-attempts', {}, (f) => ({ ns, client, kubelet } = f));

  const success = (costUSD: number) => JSON.stringify({ exitCode: 0, completion: 'promise', message: 'done', costUSD });

  it('three attempts: owned AgentTasks on their own branches, three pods at once, the cheapest one wins', async () => {
    const spec = fakeClaudeSpec({
      workspace: { git: { url: 'https://git.example.com/r.git', ref: 'main' } },
      attempts: { count: 3 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'best', spec) });
    const pods = await Promise.all([1, 2, 3].map((n) => waitForPod(client, ns, `best-attempt-${n}-ep-1`)));
    const running = await Promise.all(pods.map((p) => kubelet.setRunning(p)));
    assert.equal(running.length, 3, 'all three attempts run at the same time');
    const listed = await kubectl([
      'get',
      'at',
      '-n',
      ns,
      '-l',
      'episodic.dev/parent=best',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}:{.metadata.ownerReferences[0].name}:{.spec.workspace.git.ref}:{.spec.workspace.git.from};{end}',
    ]);
    assert.deepEqual(
      listed.split(';').filter(Boolean).sort(),
      [1, 2, 3].map((n) => `best-attempt-${n}:best:episodic/best/attempt-${n}:main`),
    );
    await waitForTask(client, ns, 'best', (s) => s.reason === 'AttemptsRunning');

    // Attempt 2 spent the least.
    for (const [i, cost] of [0.05, 0.01, 0.03].entries())
      await kubelet.terminate(running[i], { exitCode: 0, message: success(cost) });
    const done = await waitForTask(client, ns, 'best', (s) => s.phase === 'Succeeded');
    assert.equal(done.status?.attempts?.winner, 2, JSON.stringify(done.status?.attempts));
    assert.equal(done.status?.outputs?.branch, 'episodic/best/attempt-2');
    assert.equal(done.status?.attempts?.candidates?.length, 3);
  });
});
