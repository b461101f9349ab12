// What needs a person on a cluster: the runner inside each episode pod (FakeKubelet: the real runner, a fresh
// workspace seeded as a volume would carry it) collects the plan's [!] items and the DISCOVERY.md / IDEAS.md
// entries the episode added into the termination message; the controller keeps them in status.review on the
// real apiserver, and an Event ReviewItems says how many when the task ends. The entry there before is not new.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
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

describe('cluster controller: what needs a person', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-review', {}, (f) => ({ ns, client, kubelet } = f));

  it('status.review from the runner in the pod, and the ReviewItems Event when the task ends', async () => {
    const spec = fakeClaudeSpec({
      progress: { checklist: 'PLAN.md' },
      backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'rs', spec) });
    const start = { 'DISCOVERY.md': '# Discoveries\n\n- there before the task\n', 'PLAN.md': '- [ ] a\n- [ ] b\n' };
    const afterFirst = {
      'DISCOVERY.md': `${start['DISCOVERY.md']}- b needs a token nobody gave me\n`,
      'PLAN.md': '- [x] a\n- [!] b: blocked on a token\n',
    };
    const episode = (mode: string, seeded: Record<string, string>, writes: Record<string, string>) => ({
      ...seeded,
      '.fake-agent.json': JSON.stringify({ default: { mode, writeFiles: writes } }),
    });

    const first = await kubelet.runEpisode(await waitForPod(client, ns, 'rs-ep-1'), {
      files: episode('continue', start, afterFirst),
    });
    assert.equal(first.exitCode, 0, first.message);
    const second = await kubelet.runEpisode(await waitForPod(client, ns, 'rs-ep-2'), {
      files: episode('success', afterFirst, { 'IDEAS.md': '- cache the token lookup\n' }),
    });
    assert.equal(second.exitCode, 0, second.message);

    const task = await waitForTask(client, ns, 'rs', (s) => s.phase === 'Succeeded');
    const review = task.status.review;
    assert.deepEqual(review.flagged, ['b: blocked on a token']);
    assert.deepEqual(
      review.entries.map((e: { file: string; episode: number; text: string }) => [e.file, e.episode, e.text]),
      [
        ['DISCOVERY.md', 1, 'b needs a token nobody gave me'],
        ['IDEAS.md', 2, 'cache the token lookup'],
      ],
    );
    assert.equal(review.entriesMore, 0);

    const events = JSON.parse(
      await kubectl([
        'get',
        'events',
        '-n',
        ns,
        '--field-selector',
        'involvedObject.name=rs,reason=ReviewItems',
        '-o',
        'json',
      ]),
    );
    assert.deepEqual(
      events.items.map((e: { message: string }) => e.message),
      ['3 items need review: 1 [!] item in PLAN.md, 2 new entries in DISCOVERY.md / IDEAS.md'],
    );
  });
});
