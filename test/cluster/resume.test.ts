// Supervised resume on a cluster, against the real apiserver: a person resumes a NeedsReview AgentTask
// with `kubectl annotate … episodic.dev/resume=TOKEN` or `episodic resume --kubeconfig`; the controller
// records the handled token and the audit trail in status and never touches spec or metadata.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubeconfigPath, kubectl, runMain, skipCluster } from '../support/cluster.ts';
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
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

describe('cluster controller: supervised resume', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-resume', {}, (f) => ({ ns, client, kubelet } = f));

  it('an annotation resumes a tripped task in HalfOpen; the token is recorded once; spec and metadata stay as the user left them', async () => {
    const spec = fakeClaudeSpec({
      backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 },
      breaker: { noProgressEpisodes: 1, halfOpenEpisodes: 0, sameErrorEpisodes: 0 },
      resume: { policy: 'Manual' },
      limits: { maxEpisodes: 3, episodeTimeoutSeconds: 600 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'stuck', spec) });
    await kubelet.runEpisode(await waitForPod(client, ns, 'stuck-ep-1'), { env: { FAKE_AGENT_MODE: 'continue' } });
    const open = await waitForTask(
      client,
      ns,
      'stuck',
      (s) => s.reason === 'CircuitOpen' && s.resume?.heldBy === 'policy',
    );
    const before = {
      spec: open.spec,
      generation: open.metadata.generation,
      labels: open.metadata.labels,
      finalizers: open.metadata.finalizers,
    };

    await kubectl(['annotate', 'at', 'stuck', '-n', ns, 'episodic.dev/resume=tok-1', '--overwrite']);
    const pod = await waitForPod(client, ns, 'stuck-ep-2');
    const running = await waitForTask(
      client,
      ns,
      'stuck',
      (s) => s.resume?.handledToken === 'tok-1' && s.phase === 'Running',
    );
    assert.equal(running.status.breaker.state, 'HalfOpen');
    assert.equal(running.status.resume.lastResumeBy, 'user:annotation');
    await kubelet.runEpisode(pod, { env: { FAKE_AGENT_MODE: 'continue' } });
    const again = await waitForTask(client, ns, 'stuck', (s) => s.phase === 'NeedsReview' && s.episodes === 2);
    assert.equal(again.status.breaker.state, 'Open');
    assert.deepEqual(
      again.status.audit.map((a: { action: string; by: string }) => `${a.action} ${a.by}`),
      [
        'Stopped controller',
        'AutoResumeHeld policy:Manual',
        'Resumed user:annotation',
        'Stopped controller',
        'AutoResumeHeld policy:Manual',
      ],
    );
    assert.equal(again.status.audit[2].token, 'tok-1');
    // The annotation stays; its token is handled: nothing more starts.
    assert.equal((await listPods(client, ns, 'stuck')).length, 2);

    // `episodic resume --kubeconfig` sets the annotations with a merge patch, granting one more episode.
    const res = await runMain([
      'resume',
      'stuck',
      '-n',
      ns,
      '--kubeconfig',
      kubeconfigPath,
      '--episodes',
      '1',
      '--by',
      'bob',
    ]);
    assert.equal(res.code, 0, res.stderr);
    const token = /episodic\.dev\/resume=([0-9a-f-]{36})/.exec(res.stdout)?.[1];
    assert.ok(token, res.stdout);
    const third = await waitForPod(client, ns, 'stuck-ep-3');
    const resumed = await waitForTask(client, ns, 'stuck', (s) => s.resume?.handledToken === token);
    assert.equal(resumed.status.resume.lastResumeBy, 'user:bob');
    assert.equal(resumed.status.resume.grantedEpisodes, 1);
    assert.equal(resumed.metadata.annotations?.['episodic.dev/resume-episodes'], '1');
    await kubelet.runEpisode(third, { env: { FAKE_AGENT_MODE: 'continue' } });
    await waitForTask(client, ns, 'stuck', (s) => s.phase === 'NeedsReview' && s.episodes === 3);

    const after = await getTask(client, ns, 'stuck');
    assert.deepEqual(after?.spec, before.spec, 'the controller never writes spec');
    assert.equal(after?.metadata.generation, before.generation);
    assert.deepEqual(after?.metadata.labels, before.labels);
    assert.deepEqual(after?.metadata.finalizers, before.finalizers);
    const events = JSON.parse(
      await kubectl(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=stuck', '-o', 'json']),
    );
    const reasons = events.items.map((e: { reason: string }) => e.reason);
    assert.ok(
      reasons.includes('Resumed') && reasons.includes('AutoResumeHeld') && reasons.includes('CircuitOpen'),
      reasons.join(', '),
    );
  });

  it('a malformed annotation is rejected in the audit trail, naming it, and handled once', async () => {
    const spec = fakeClaudeSpec({
      resume: { policy: 'Manual' },
      limits: { maxEpisodes: 1, episodeTimeoutSeconds: 600 },
      breaker: { noProgressEpisodes: 0 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'capped', spec) });
    await kubelet.runEpisode(await waitForPod(client, ns, 'capped-ep-1'), { env: { FAKE_AGENT_MODE: 'continue' } });
    await waitForTask(client, ns, 'capped', (s) => s.reason === 'MaxEpisodesReached');
    await kubectl([
      'annotate',
      'at',
      'capped',
      '-n',
      ns,
      'episodic.dev/resume=tok-2',
      'episodic.dev/resume-episodes=many',
      '--overwrite',
    ]);
    const task = await waitForTask(client, ns, 'capped', (s) => s.resume?.handledToken === 'tok-2');
    const entry = task.status.audit.at(-1);
    assert.equal(entry.action, 'ResumeRejected');
    assert.match(
      entry.message,
      /annotation episodic\.dev\/resume-episodes: must be a whole number from 1 to 10000, got "many"/,
    );
    assert.equal(task.status.phase, 'NeedsReview');
  });
});
