// The leash on a cluster: the same rules as locally, with evidence gathered by the real runner inside the
// (fake-kubelet-run) episode pod and carried home in the termination message. Each episode pod gets a fresh
// workspace seeded with what the episode starts from (as a volume or clone would carry it).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  FAKE_CLAUDE,
  type FakeKubelet,
  NODE,
  agentTaskManifest,
  fakeClaudeSpec,
  listPods,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

describe('cluster controller: the leash', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-leash', {}, (f) => ({ ns, client, kubelet } = f));
  const fast = { backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 } };
  /** The stand-in's script for one episode, placed in the workspace with whatever the episode starts from. */
  const script = (step: Record<string, unknown>, files: Record<string, string> = {}) => ({
    ...files,
    '.fake-agent.json': JSON.stringify({ default: step }),
  });
  const plan = (done: number) =>
    ['# Plan', ...[1, 2, 3].map((i) => `- [${i <= done ? 'x' : ' '}] step ${i}`)].join('\n');

  it('an agent that never changes its workspace opens the breaker after 5 + 3 episodes: NeedsReview, CircuitOpen', async () => {
    const spec = fakeClaudeSpec({
      limits: { maxEpisodes: 20, episodeTimeoutSeconds: 600 },
      backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'stuck', spec) });
    for (let n = 1; n <= 8; n++) {
      const run = await kubelet.runEpisode(await waitForPod(client, ns, `stuck-ep-${n}`), {
        env: { FAKE_AGENT_MODE: 'continue' },
      });
      assert.equal(run.exitCode, 0);
    }
    const task = await waitForTask(client, ns, 'stuck', (s) => s.reason === 'CircuitOpen');
    assert.equal(task.status.phase, 'NeedsReview');
    assert.equal(task.status.episodes, 8);
    assert.equal(task.status.breaker.state, 'Open');
    assert.match(task.status.message, /no progress in 8 episodes in a row \(directory unchanged/);
    // Open is terminal: the status that says so is written before another pod could be created.
    assert.ok(!(await listPods(client, ns, 'stuck')).some((p) => p.metadata.name === 'stuck-ep-9'));
    const events = JSON.parse(
      await kubectl(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=stuck', '-o', 'json']),
    );
    const reasons = events.items.map((e: { reason: string }) => e.reason);
    assert.ok(reasons.includes('BreakerHalfOpen') && reasons.includes('CircuitOpen'), reasons.join(', '));
  });

  it('an agent that progresses every third episode never trips and runs to its end', async () => {
    await kubectl(['apply', '-f', '-'], {
      input: agentTaskManifest(
        ns,
        'slow',
        fakeClaudeSpec({ ...fast, limits: { maxEpisodes: 9, episodeTimeoutSeconds: 600 } }),
      ),
    });
    for (let n = 1; n <= 9; n++) {
      const step = {
        mode: n === 9 ? 'success' : 'continue',
        ...(n % 3 === 0 ? { writeFiles: { [`step-${n}.txt`]: 'work' } } : {}),
      };
      await kubelet.runEpisode(await waitForPod(client, ns, `slow-ep-${n}`), { files: script(step) });
    }
    const task = await waitForTask(client, ns, 'slow', (s) => s.phase === 'Succeeded');
    assert.equal(task.status.episodes, 9);
    assert.equal(task.status.breaker.state, 'Closed');
    assert.equal(task.status.workspaceChanges, 3);
  });

  it('the same error five times in a row opens the breaker before the failure limit', async () => {
    const spec = fakeClaudeSpec({
      ...fast,
      limits: { maxEpisodes: 20, maxConsecutiveFailures: 10, episodeTimeoutSeconds: 600 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'looping', spec) });
    for (let n = 1; n <= 5; n++)
      await kubelet.runEpisode(await waitForPod(client, ns, `looping-ep-${n}`), { env: { FAKE_AGENT_MODE: 'fail' } });
    const task = await waitForTask(client, ns, 'looping', (s) => s.reason === 'CircuitOpen');
    assert.equal(task.status.episodes, 5);
    assert.equal(task.status.breaker.trippedBy, 'sameError');
    assert.equal(task.status.consecutiveFailures, 5);
  });

  it('"done" without the change completion.requires is recorded as continue, never success', async () => {
    const spec = fakeClaudeSpec({
      ...fast,
      completion: { promise: 'COMPLETE', requires: ['changes'] },
      limits: { maxEpisodes: 2, episodeTimeoutSeconds: 600 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'claims', spec) });
    for (let n = 1; n <= 2; n++)
      await kubelet.runEpisode(await waitForPod(client, ns, `claims-ep-${n}`), { env: { FAKE_AGENT_MODE: 'success' } });
    const task = await waitForTask(client, ns, 'claims', (s) => s.reason === 'MaxEpisodesReached');
    assert.equal(task.status.lastEpisode.outcome, 'continue');
    assert.match(task.status.lastEpisode.message, /completion claimed without evidence: missing changes/);
  });

  it('ticking PLAN.md finishes the task when the checklist is complete', async () => {
    const spec = fakeClaudeSpec({
      ...fast,
      progress: { checklist: 'PLAN.md' },
      completion: { checklist: true },
      limits: { maxEpisodes: 10, episodeTimeoutSeconds: 600 },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'planned', spec) });
    for (let n = 1; n <= 3; n++) {
      const files = script({ mode: 'continue', writeFiles: { 'PLAN.md': plan(n) } }, { 'PLAN.md': plan(n - 1) });
      await kubelet.runEpisode(await waitForPod(client, ns, `planned-ep-${n}`), { files });
    }
    const task = await waitForTask(client, ns, 'planned', (s) => s.phase === 'Succeeded');
    assert.equal(task.status.reason, 'ChecklistComplete');
    assert.equal(task.status.episodes, 3);
    assert.deepEqual(task.status.progress, { done: 3, total: 3, inProgress: 0, failed: 0, skipped: 0, summary: '3/3' });
  });

  it('an agent that echoes a prompt naming the sentinel does not complete; a real claim after the echo does', async () => {
    const prompt = 'Fix the bug. When every test passes, print <promise>DONE</promise>. Episode {{episode}}.';
    for (const [name, output] of [
      ['echo-text', 'text'],
      ['echo-stream', 'claude'],
    ] as const) {
      const argv = output === 'text' ? ['--output-format', 'text'] : ['--output-format', 'stream-json', '--verbose'];
      const spec = fakeClaudeSpec(
        { ...fast, prompt, completion: { promise: 'DONE' }, limits: { maxEpisodes: 2, episodeTimeoutSeconds: 600 } },
        { command: [NODE, FAKE_CLAUDE, '-p', ...argv], output },
      );
      await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, spec) });
      for (let n = 1; n <= 2; n++) {
        await kubelet.runEpisode(await waitForPod(client, ns, `${name}-ep-${n}`), {
          files: script({ mode: 'echo-prompt', then: 'continue', promise: 'DONE' }),
        });
      }
      const task = await waitForTask(client, ns, name, (s) => s.reason === 'MaxEpisodesReached');
      assert.equal(task.status.lastEpisode.outcome, 'continue', name);
    }
    const spec = fakeClaudeSpec(
      { ...fast, prompt, completion: { promise: 'DONE' } },
      { command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'text'], output: 'text' },
    );
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'echo-then-done', spec) });
    await kubelet.runEpisode(await waitForPod(client, ns, 'echo-then-done-ep-1'), {
      files: script({ mode: 'echo-prompt', then: 'success', promise: 'DONE' }),
    });
    const done = await waitForTask(client, ns, 'echo-then-done', (s) => s.phase === 'Succeeded');
    assert.equal(done.status.reason, 'PromiseDetected');
  });
});
