// The leash on a cluster: the same rules as locally, with evidence gathered by the real runner inside the
// (fake-kubelet-run) episode pod and carried home in the termination message.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { FakeKubelet, agentTaskManifest, fakeClaudeSpec, listPods, waitForPod, waitForTask, withController } from '../support/kubelet.ts';

describe('cluster controller: the leash', { skip: skipCluster, timeout: 120_000 }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-leash', {}, (f) => ({ ns, client, kubelet } = f));

  it('an agent that never changes its workspace opens the breaker after 5 + 3 episodes: NeedsReview, CircuitOpen', async () => {
    const spec = fakeClaudeSpec({ limits: { maxEpisodes: 20, episodeTimeoutSeconds: 600 }, backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 } });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'stuck', spec) });
    for (let n = 1; n <= 8; n++) {
      const run = await kubelet.runEpisode(await waitForPod(client, ns, `stuck-ep-${n}`), { env: { FAKE_AGENT_MODE: 'continue' } });
      assert.equal(run.exitCode, 0);
    }
    const task = await waitForTask(client, ns, 'stuck', (s) => s.reason === 'CircuitOpen');
    assert.equal(task.status.phase, 'NeedsReview');
    assert.equal(task.status.episodes, 8);
    assert.equal(task.status.breaker.state, 'Open');
    assert.match(task.status.message, /no progress in 8 episodes in a row \(directory unchanged/);
    // Open is terminal: the status that says so is written before another pod could be created.
    assert.ok(!(await listPods(client, ns, 'stuck')).some((p) => p.metadata.name === 'stuck-ep-9'));
    const events = JSON.parse(await kubectl(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=stuck', '-o', 'json']));
    const reasons = events.items.map((e: { reason: string }) => e.reason);
    assert.ok(reasons.includes('BreakerHalfOpen') && reasons.includes('CircuitOpen'), reasons.join(', '));
  });
});
