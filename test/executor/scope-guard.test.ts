// The facts of skipWhen and scope where the workspace is (evidence/scope-guard.ts), on real files and real git:
// what an episode changed (committed by the agent or not, renamed, deleted, odd names; paths already dirty at
// its start are not its), what a revert restores, and a skipWhen path that leads out of the workspace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { episodeResult } from '../../controller/api/episode-result.ts';
import {
  changedPaths,
  checkSkipWhen,
  enforceScope,
  scopeBaseline,
} from '../../controller/executors/evidence/scope-guard.ts';
import { git } from '../support/git.ts';

function repo(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'episodic-scope-guard-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  git(dir, 'init', '--quiet', '--initial-branch=main');
  git(dir, 'add', '.');
  git(dir, 'commit', '--quiet', '-m', 'start');
  return dir;
}

test('changedPaths (git): committed and uncommitted, renamed, deleted, new and odd names; dirty at the start is not judged', async () => {
  const dir = repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n', 'src/x.ts': 'x\n', '.gitignore': 'build/\n' });
  writeFileSync(join(dir, 'c.txt'), 'dirty before\n');
  const before = await scopeBaseline(dir);
  assert.equal(before?.kind, 'git');
  // The agent commits one change and leaves others.
  writeFileSync(join(dir, 'a.txt'), 'changed\n');
  git(dir, 'commit', '--quiet', '-am', 'agent');
  git(dir, 'mv', 'b.txt', 'moved.txt');
  unlinkSync(join(dir, 'src/x.ts'));
  writeFileSync(join(dir, 'c.txt'), 'dirty, touched again\n');
  writeFileSync(join(dir, 'with space ü.md'), 'odd\n');
  mkdirSync(join(dir, 'build'));
  writeFileSync(join(dir, 'build', 'out.js'), 'ignored\n');
  const changed = await changedPaths(dir, before as NonNullable<typeof before>);
  assert.deepEqual(changed.sort(), ['a.txt', 'b.txt', 'moved.txt', 'src/x.ts', 'with space ü.md']);
  rmSync(dir, { recursive: true, force: true });
});

test('enforceScope Revert (git): back to the start commit, agent commits included; new files deleted; the in-scope work stays', async () => {
  const dir = repo({ 'README.md': 'original\n', 'src/keep.ts': 'k\n', 'gone.txt': 'g\n' });
  const before = await scopeBaseline(dir);
  writeFileSync(join(dir, 'README.md'), 'committed by the agent\n');
  git(dir, 'commit', '--quiet', '-am', 'agent');
  unlinkSync(join(dir, 'gone.txt'));
  mkdirSync(join(dir, 'deep', 'er'), { recursive: true });
  writeFileSync(join(dir, 'deep', 'er', 'new.txt'), 'n\n');
  writeFileSync(join(dir, 'staged.txt'), 's\n');
  git(dir, 'add', 'staged.txt');
  writeFileSync(join(dir, 'src', 'new.ts'), 'in scope\n');
  const scope = { paths: ['src/**'], onViolation: 'Revert' as const };
  const result = await enforceScope(dir, scope, [], before, episodeResult({ exitCode: 0 }));
  assert.deepEqual(result.scope, {
    onViolation: 'Revert',
    count: 4,
    paths: ['README.md', 'deep/er/new.txt', 'gone.txt', 'staged.txt'],
    reverted: 4,
  });
  assert.equal(readFileSync(join(dir, 'README.md'), 'utf8'), 'original\n');
  assert.equal(readFileSync(join(dir, 'gone.txt'), 'utf8'), 'g\n');
  assert.equal(existsSync(join(dir, 'deep')), false, 'new file and the directories it left empty');
  assert.equal(existsSync(join(dir, 'staged.txt')), false);
  assert.equal(readFileSync(join(dir, 'src', 'new.ts'), 'utf8'), 'in scope\n');
  // Nothing outside the scope is left against the start commit.
  assert.deepEqual(await changedPaths(dir, before as NonNullable<typeof before>), ['src/new.ts']);
  rmSync(dir, { recursive: true, force: true });
});

test('enforceScope (plain directory): NeedsReview lists, Revert deletes new files and names what it cannot restore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'episodic-scope-plain-'));
  writeFileSync(join(dir, 'old.txt'), 'o\n');
  writeFileSync(join(dir, 'del.txt'), 'd\n');
  const before = await scopeBaseline(dir);
  assert.equal(before?.kind, 'directory');
  writeFileSync(join(dir, 'old.txt'), 'longer now\n');
  unlinkSync(join(dir, 'del.txt'));
  writeFileSync(join(dir, 'new.txt'), 'n\n');
  const base = episodeResult({ exitCode: 0 });
  const review = await enforceScope(dir, { paths: ['src/**'], onViolation: 'NeedsReview' }, [], before, base);
  assert.deepEqual(review.scope?.paths, ['del.txt', 'new.txt', 'old.txt']);
  assert.ok(existsSync(join(dir, 'new.txt')), 'NeedsReview touches nothing');
  const reverted = await enforceScope(dir, { paths: ['src/**'], onViolation: 'Revert' }, [], before, base);
  assert.deepEqual(reverted.scope, {
    onViolation: 'Revert',
    count: 3,
    paths: ['del.txt', 'new.txt', 'old.txt'],
    reverted: 1,
    unrestored: ['del.txt', 'old.txt'],
    unrestoredCount: 2,
  });
  assert.equal(existsSync(join(dir, 'new.txt')), false);
  rmSync(dir, { recursive: true, force: true });
});

test('checkSkipWhen: the plan file and fileExists in the workspace; a symlink leading out counts as missing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'episodic-skip-'));
  const outside = mkdtempSync(join(tmpdir(), 'episodic-skip-out-'));
  writeFileSync(join(outside, 'PLAN.md'), '- [ ] secret\n');
  assert.equal(checkSkipWhen(dir, { checklistPending: 'PLAN.md' }), undefined);
  writeFileSync(join(dir, 'PLAN.md'), '- [x] a\n- [~] b\n- [ ] c\n');
  assert.equal(checkSkipWhen(dir, { checklistPending: 'PLAN.md' }), 'PLAN.md has 2 pending items');
  writeFileSync(join(dir, 'PLAN.md'), '- [x] a\n- [!] b\n');
  assert.equal(checkSkipWhen(dir, { checklistPending: 'PLAN.md' }), undefined);
  mkdirSync(join(dir, 'flags'));
  assert.equal(checkSkipWhen(dir, { fileExists: 'flags' }), 'flags exists');
  symlinkSync(join(outside, 'PLAN.md'), join(dir, 'LINK.md'));
  assert.equal(checkSkipWhen(dir, { checklistPending: 'LINK.md' }), undefined);
  assert.equal(checkSkipWhen(dir, { fileExists: 'LINK.md' }), undefined);
  assert.equal(checkSkipWhen(dir, { fileExists: '../' }), undefined);
  rmSync(dir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});
