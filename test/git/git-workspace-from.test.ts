// Where a branch missing on the remote starts (git-workspace.ts prepareGitWorkspace): from `from` when the
// remote has it, else the default branch — an attempt of a trigger item's task is cloned before episodic/N,
// its `from`, is pushed. Real git, a bare remote.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { branchDiff } from '../../controller/git/adopt-branch.ts';
import { prepareGitWorkspace } from '../../controller/git/git-workspace.ts';
import { git } from '../support/git.ts';
import { tempDir } from '../support/local.ts';

/** A bare remote with main (one commit) and side (one more on top of it). */
function remote(): { dir: string; bare: string; main: string; side: string } {
  const dir = tempDir();
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  git(seed, 'commit', '--quiet', '--allow-empty', '-m', 'main');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  git(seed, 'commit', '--quiet', '--allow-empty', '-m', 'side');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/side');
  return { dir, bare, main: git(bare, 'rev-parse', 'main'), side: git(bare, 'rev-parse', 'side') };
}

const clone = async (bare: string, dir: string, from: string) => {
  const ws = { url: bare, ref: 'episodic/t/attempt-1', from, dir, log: () => {} };
  const step = await prepareGitWorkspace(ws);
  assert.deepEqual(step, { ok: true });
  assert.equal(git(dir, 'rev-parse', '--abbrev-ref', 'HEAD'), 'episodic/t/attempt-1');
  return git(dir, 'rev-parse', 'HEAD');
};

test('a new branch starts from `from` when the remote has it', async () => {
  const r = remote();
  assert.equal(await clone(r.bare, join(r.dir, 'ws'), 'side'), r.side);
});

test('a new branch whose `from` is not pushed yet starts from the default branch', async () => {
  const r = remote();
  assert.equal(await clone(r.bare, join(r.dir, 'ws'), 'episodic/1'), r.main);
});

test('a `from` matching only the tail of another branch is not taken for it', async () => {
  const r = remote();
  git(r.bare, 'branch', 'x/side', 'side');
  git(r.bare, 'branch', '-D', 'side');
  assert.equal(await clone(r.bare, join(r.dir, 'ws'), 'side'), r.main);
});

test("branchDiff: an attempt's diff against its `from`, or the default branch while `from` is not pushed (a judge's view)", async () => {
  const { dir, bare } = remote();
  const work = join(dir, 'attempt');
  git(dir, 'clone', '--quiet', bare, work);
  git(work, 'checkout', '--quiet', '-b', 'episodic/1-attempt-1');
  writeFileSync(join(work, 'SHORT.md'), 'short\n');
  git(work, 'add', '.');
  git(work, 'commit', '--quiet', '-m', 'attempt');
  const unpushedFrom = await branchDiff(work, 'episodic/1');
  assert.match(unpushedFrom ?? '', /SHORT\.md/, 'against the default branch, main');
  assert.match((await branchDiff(work, 'side')) ?? '', /SHORT\.md/, 'against a pushed from');
});
