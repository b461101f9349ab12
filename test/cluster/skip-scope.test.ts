// skipWhen and scope on the real kube-apiserver, the real runner in each episode "pod" (FakeKubelet): the
// runner checks a step's skipWhen before the agent and reports `skipped`, the controller records the step
// Skipped and starts the next one; an episode outside its scope stops the task (OutOfScope), or, with Revert in
// a git workspace, the runner restores the paths before its checkpoint and push, as a local executor does.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EpisodeConfigSchema } from '../../controller/api/episode-config.ts';
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
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import { git } from '../support/git.ts';

const EPISODE_CRD = path.join(import.meta.dirname, '..', '..', 'crds', 'episodic.dev_agentepisodes.yaml');
const script = (episodes: Record<string, unknown>) => JSON.stringify({ episodes });
const dirs: string[] = [];

/** A bare repository on main with README.md, src/keep.ts and the stand-in agent's script. */
async function seededRepo(episodes: Record<string, unknown>): Promise<{ bare: string; url: string }> {
  const root = await mkdtemp(path.join(tmpdir(), 'episodic-scope-git-'));
  dirs.push(root);
  const bare = path.join(root, 'origin.git');
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = path.join(root, 'seed');
  git(root, 'clone', '--quiet', bare, seed);
  await writeFile(path.join(seed, 'README.md'), 'original\n');
  execFileSync('mkdir', ['-p', path.join(seed, 'src')]);
  await writeFile(path.join(seed, 'src', 'keep.ts'), 'export {};\n');
  await writeFile(path.join(seed, '.fake-agent.json'), script(episodes));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  return { bare, url: `file://${bare}` };
}

describe('cluster controller: skipWhen and scope', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  withController('ctl-skip-scope', {}, (f) => ({ ns, client, kubelet } = f));
  // The tests apply only the AgentTask CRD: the AgentEpisode one of this tree knows the outcome `skipped`.
  before(async () => {
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', EPISODE_CRD]);
  });
  after(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('skipWhen: the runner skips a step whose PLAN.md has pending items; the next step starts; no agent ran', async () => {
    const record = path.join(tmpdir(), `episodic-skip-${Date.now()}.jsonl`);
    dirs.push(record);
    const spec = fakeClaudeSpec(
      {
        prompt: undefined,
        steps: [
          { name: 'plan', prompt: 'plan', skipWhen: { checklistPending: 'PLAN.md' } },
          { name: 'execute', prompt: 'execute' },
        ],
      },
      { env: [{ name: 'FAKE_AGENT_RECORD', value: record }] },
    );
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'ralph', spec) });
    const first = await waitForPod(client, ns, 'ralph-ep-1');
    const config = EpisodeConfigSchema.parse(
      JSON.parse(first.spec.containers[0].env.find((e: any) => e.name === 'EPISODIC_EPISODE_CONFIG').value),
    );
    assert.deepEqual(config.skipWhen, { checklistPending: 'PLAN.md' });
    const skipped = await kubelet.runEpisode(first, { files: { 'PLAN.md': '- [x] one\n- [~] two\n- [ ] three\n' } });
    assert.equal(skipped.exitCode, 0, skipped.message);
    assert.deepEqual(JSON.parse(skipped.message).skipped, { reason: 'SkipWhen' });

    const second = await waitForPod(client, ns, 'ralph-ep-2');
    const inExecute = await waitForTask(client, ns, 'ralph', (s) => s.step?.name === 'execute');
    assert.deepEqual(
      inExecute.status?.steps?.map((s: any) => [s.name, s.phase, s.reason, s.episodes]),
      [
        ['plan', 'Skipped', 'SkipWhen', 0],
        ['execute', 'Running', 'EpisodeRunning', 1],
      ],
    );
    const ran = await kubelet.runEpisode(second, { env: { FAKE_AGENT_MODE: 'success' } });
    assert.equal(ran.exitCode, 0, ran.message);
    const done = await waitForTask(client, ns, 'ralph', (s) => s.phase === 'Succeeded');
    assert.deepEqual(
      done.status?.steps?.map((s: any) => [s.name, s.phase]),
      [
        ['plan', 'Skipped'],
        ['execute', 'Succeeded'],
      ],
    );
    const records = JSON.parse(await kubectl(['get', 'ae', '-n', ns, '-o', 'json'])).items;
    const byNumber = records
      .map((r: any) => [r.record.number, r.record.step, r.record.outcome])
      .sort((a: any[], b: any[]) => a[0] - b[0]);
    assert.deepEqual(byNumber, [
      [1, 'plan', 'skipped'],
      [2, 'execute', 'succeeded'],
    ]);
    const runs = (await readFile(record, 'utf8')).trim().split('\n');
    assert.equal(runs.length, 1, 'only execute ran an agent');
    assert.equal(JSON.parse(runs[0]).env.EPISODIC_STEP, 'execute');
  });

  it('the apiserver refuses a skipWhen path leading out of the workspace, and skipWhen with both or neither field', async () => {
    const refused = async (skipWhen: unknown) => {
      const spec = fakeClaudeSpec({ prompt: undefined, steps: [{ name: 'a', prompt: 'a', skipWhen }] });
      const err = await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'bad', spec) }).then(
        () => undefined,
        (e: Error) => e.message,
      );
      return err ?? 'accepted';
    };
    assert.match(await refused({ fileExists: '../outside' }), /must be a relative path inside the workspace/);
    assert.match(await refused({ checklistPending: '/etc/PLAN.md' }), /must be a relative path inside the workspace/);
    assert.match(await refused({}), /exactly one of checklistPending or fileExists is required/);
    assert.match(
      await refused({ fileExists: 'a', checklistPending: 'b' }),
      /exactly one of checklistPending or fileExists/,
    );
  });

  it('scope NeedsReview: a change outside scope.paths stops the task (OutOfScope) with the paths in the message', async () => {
    const spec = fakeClaudeSpec({ scope: { paths: ['src/**'] } });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'narrow', spec) });
    const pod = await waitForPod(client, ns, 'narrow-ep-1');
    const episodes = { '1': { mode: 'success', writeFiles: { 'src/a.ts': 'a\n', Makefile: 'all:\n' } } };
    const ran = await kubelet.runEpisode(pod, { files: { '.fake-agent.json': script(episodes) } });
    assert.equal(ran.exitCode, 0, ran.message);
    const stopped = await waitForTask(client, ns, 'narrow', (s) => s.phase === 'NeedsReview');
    assert.equal(stopped.status?.reason, 'OutOfScope');
    assert.equal(stopped.status?.message, 'episode 1 changed 1 path outside scope.paths: Makefile');
  });

  it('scope Revert (git): the runner restores the paths to the start commit before pushing; the episode is no progress', async () => {
    const { bare, url } = await seededRepo({
      '1': { mode: 'success', writeFiles: { 'src/a.ts': 'a\n', 'README.md': 'scribbled\n', 'extra/new.txt': 'n\n' } },
      '2': { mode: 'success', writeFiles: { 'src/b.ts': 'b\n' } },
    });
    const spec = fakeClaudeSpec({
      workspace: { git: { url, ref: 'main' } },
      scope: { paths: ['src/**'], onViolation: 'Revert' },
    });
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'reverting', spec) });
    const first = await kubelet.runEpisode(await waitForPod(client, ns, 'reverting-ep-1'));
    assert.equal(first.exitCode, 0, first.message);
    assert.deepEqual(JSON.parse(first.message).scope, {
      onViolation: 'Revert',
      count: 2,
      paths: ['README.md', 'extra/new.txt'],
      reverted: 2,
    });
    // Pushed: the in-scope work, the README as it was, no new file.
    assert.equal(git(bare, 'show', 'main:README.md'), 'original');
    assert.equal(git(bare, 'show', 'main:src/a.ts'), 'a');
    assert.equal(git(bare, 'ls-tree', '--name-only', 'main', 'extra'), '');
    assert.equal(git(bare, 'log', '-1', '--format=%s', 'main'), 'episodic: reverting episode 1 (continue)');

    const second = await waitForPod(client, ns, 'reverting-ep-2');
    const after1 = await waitForTask(client, ns, 'reverting', (s) => s.lastEpisode?.number === 1);
    assert.equal(after1.status?.lastEpisode?.outcome, 'continue');
    assert.match(after1.status?.lastEpisode?.message ?? '', /^reverted 2 paths outside scope\.paths/);
    assert.equal(after1.status?.workspaceChanges, 0);
    assert.equal(after1.status?.breaker?.noProgress, 1);
    const ran = await kubelet.runEpisode(second);
    assert.equal(ran.exitCode, 0, ran.message);
    await waitForTask(client, ns, 'reverting', (s) => s.phase === 'Succeeded');
  });
});
