// Best-of-N on the real API server with the controller and the test kubelet (issue 32 §2): the attempts are
// AgentTasks owned by the task on their own branches; their pods run the real runner against a real git
// remote at the same time (every agent waits for a go signal given only once all three pods are Running);
// the winner's branch becomes the task's (status.attempts.adopted, as locally) through the controller's own
// clone, and a judge's prompt holds each attempt's bounded diff.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  type FakeKubelet,
  FAKE_CLAUDE,
  NODE,
  agentTaskManifest,
  fakeClaudeSpec,
  listPods,
  waitForPod,
  waitForTask,
  withController,
} from '../support/kubelet.ts';
import { waitFor } from '../support/wait.ts';
import { git } from '../support/git.ts';

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i}`).join('\n');
const heads = (bare: string) => git(bare, 'for-each-ref', '--format=%(refname:short)', 'refs/heads').split('\n').sort();

/** A bare remote whose agent script gives attempt N `sizes[N-1]` lines, each agent waiting for `go`. */
function remote(task: string, sizes: number[]): { bare: string; go: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'episodic-attempts-'));
  const bare = join(dir, 'origin.git');
  const go = join(dir, 'go');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  const tasks = Object.fromEntries(
    sizes.map((n, i) => [
      `${task}-attempt-${i + 1}`,
      { mode: 'success', waitForFile: go, writeFiles: { 'work.txt': lines(n) } },
    ]),
  );
  writeFileSync(join(seed, '.fake-agent.json'), JSON.stringify({ tasks }));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  return { bare, go, dir };
}

describe('cluster controller: best-of-N attempts', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-attempts', {}, (f) => ({ ns, client, kubelet } = f));

  /** Runs the three attempts' pods at once; the go signal comes once the API server has all three Running. */
  async function runAttempts(task: string, go: string): Promise<void> {
    const pods = await Promise.all([1, 2, 3].map((n) => waitForPod(client, ns, `${task}-attempt-${n}-ep-1`)));
    const runs = pods.map((p) => kubelet.runEpisode(p));
    await waitFor('all three attempt pods Running at once', async () => {
      const phases = (await listPods(client, ns)).filter((p) => p.metadata.name.startsWith(`${task}-attempt-`));
      return phases.length === 3 && phases.every((p) => p.status?.phase === 'Running');
    });
    writeFileSync(go, 'go');
    const outcomes = await Promise.all(runs);
    assert.deepEqual(
      outcomes.map((o) => o.exitCode),
      [0, 0, 0],
      outcomes.map((o) => o.message).join('\n'),
    );
  }

  it('evidence: three pods at once, the smallest diff wins and becomes the task branch; the losers go', async () => {
    const { bare, go } = remote('best', [30, 5, 12]);
    const start = git(bare, 'rev-parse', 'main');
    const spec = fakeClaudeSpec({ workspace: { git: { url: bare, ref: 'main' } }, attempts: { count: 3 } });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'best', spec) });
    await runAttempts('best', go);
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
    const done = await waitForTask(client, ns, 'best', (s) => s.phase === 'Succeeded' || s.phase === 'Failed', 60_000);
    const attempts = done.status?.attempts;
    assert.equal(done.status?.phase, 'Succeeded', done.status?.message);
    assert.equal(attempts?.winner, 2, JSON.stringify(attempts));
    assert.deepEqual(
      attempts?.candidates?.map((c: any) => c.changedLines),
      [30, 5, 12],
    );
    assert.equal(done.status?.outputs?.branch, 'episodic/best/attempt-2');
    // Adopted as locally: main is the winner's commit, on top of the start; the losers' branches are gone.
    const head = git(bare, 'rev-parse', 'main');
    assert.equal(head, git(bare, 'rev-parse', 'episodic/best/attempt-2'));
    assert.equal(git(bare, 'merge-base', start, head), start);
    assert.equal(git(bare, 'show', 'main:work.txt'), lines(5));
    assert.deepEqual(attempts?.adopted, {
      into: 'main',
      commit: head,
      deletedBranches: ['episodic/best/attempt-1', 'episodic/best/attempt-3'],
      keptBranches: [],
    });
    assert.deepEqual(heads(bare), ['episodic/best/attempt-2', 'main']);
    assert.match(done.status?.message ?? '', /; main is now its [0-9a-f]{12}$/);
  });

  it("judge: its prompt holds each attempt's diff, its verdict 3 wins, keepLosers keeps the others", async () => {
    const { bare, go, dir } = remote('jb', [30, 5, 12]);
    const record = join(dir, 'judge-runs.jsonl');
    const judgeScript = join(dir, 'judge.json');
    writeFileSync(judgeScript, JSON.stringify({ default: { mode: 'success', outputs: { winner: '3' } } }));
    const judge = {
      prompt: 'Pick the best:\n{{attempts}}\nWrite <output name="winner">N</output>.',
      agent: { command: [NODE, FAKE_CLAUDE] },
    };
    const spec = fakeClaudeSpec({
      workspace: { git: { url: bare, ref: 'main' } },
      attempts: { count: 3, select: 'judge', judge, keepLosers: true },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'jb', spec) });
    await runAttempts('jb', go);
    const judgePod = await waitForPod(client, ns, 'jb-judge-ep-1', 60_000);
    const env = { FAKE_AGENT_SCRIPT: judgeScript, FAKE_AGENT_RECORD: record };
    assert.equal((await kubelet.runEpisode(judgePod, { env })).exitCode, 0);
    assert.ok(existsSync(record), 'the judge ran');
    const prompt = JSON.parse(readFileSync(record, 'utf8').trim().split('\n')[0] as string).stdin as string;
    for (const [n, size] of [30, 5, 12].entries()) {
      assert.match(
        prompt,
        new RegExp(`--- attempt ${n + 1} diff \\(episodic/jb/attempt-${n + 1}\\) ---\\n work\\.txt \\| ${size} \\+`),
      );
    }
    assert.match(prompt, /\+\+\+ b\/work\.txt\n@@ -0,0 \+1,5 @@\n\+line 0/);
    assert.match(prompt, /"number":2,"task":"jb-attempt-2"/);

    const done = await waitForTask(client, ns, 'jb', (s) => s.phase === 'Succeeded' || s.phase === 'Failed', 60_000);
    assert.equal(done.status?.phase, 'Succeeded', done.status?.message);
    assert.equal(done.status?.attempts?.winner, 3);
    assert.equal(done.status?.attempts?.selectedBy, 'judge');
    assert.equal(git(bare, 'rev-parse', 'main'), git(bare, 'rev-parse', 'episodic/jb/attempt-3'));
    assert.deepEqual(done.status?.attempts?.adopted?.keptBranches, ['episodic/jb/attempt-1', 'episodic/jb/attempt-2']);
    assert.deepEqual(heads(bare), ['episodic/jb/attempt-1', 'episodic/jb/attempt-2', 'episodic/jb/attempt-3', 'main']);
  });
});
