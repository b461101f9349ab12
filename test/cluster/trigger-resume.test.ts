// A `/episodic resume` comment on a cluster: the trigger's requester patches the same annotations as
// `episodic resume --kubeconfig` (requestClusterResume), and the controller records the commenter in the audit trail.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestClusterResume } from '../../controller/sources/cluster/resume-annotations.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { resumeCommand } from '../../controller/reconciler/trigger-resume.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  agentTaskManifest,
  fakeClaudeSpec,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

describe('cluster: a resume command from a forge comment', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-trig-resume', {}, (f) => ({ ns, client, kubelet } = f));

  it('resumes the NeedsReview task and the audit trail names the commenter', async () => {
    const spec = fakeClaudeSpec({
      backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 },
      breaker: { noProgressEpisodes: 1, halfOpenEpisodes: 0, sameErrorEpisodes: 0 },
      resume: { policy: 'Manual' },
      limits: { maxEpisodes: 3, episodeTimeoutSeconds: 600 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'stuck', spec) });
    await kubelet.runEpisode(await waitForPod(client, ns, 'stuck-ep-1'), { env: { FAKE_AGENT_MODE: 'continue' } });
    const open = await waitForTask(client, ns, 'stuck', (s) => s.phase === 'NeedsReview');
    const decision = resumeCommand({
      comment: { id: 77, author: 'alice', authorIsBot: false, body: '/episodic resume' },
      forge: 'gitea',
      minPermission: 'write',
      permission: 'write',
      phase: open.status.phase,
      handledToken: open.status.resume?.handledToken,
    });
    assert.equal(decision.kind, 'resume');
    if (decision.kind !== 'resume') return;
    await requestClusterResume(client, ns, 'stuck', decision.request);
    const resumed = await waitForTask(client, ns, 'stuck', (s) => s.resume?.handledToken === 'gitea-comment-77');
    assert.equal(resumed.status.resume.lastResumeBy, 'user:gitea:alice');
    const last = resumed.status.audit.filter((a: { action: string }) => a.action === 'Resumed').at(-1);
    assert.deepEqual([last.by, last.token], ['user:gitea:alice', 'gitea-comment-77']);
    assert.deepEqual(resumed.spec, open.spec);
    assert.equal(resumed.metadata.generation, open.metadata.generation);
  });
});
