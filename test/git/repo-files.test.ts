// HEAD and the local identity read from a repository's files, checked against what the real git answers for
// the same repository: loose and packed refs, a detached HEAD, an unborn branch, a linked worktree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configSetsUserEmail, emptyTree, localIdentityConfigured, readHead } from '../../controller/git/repo-files.ts';
import { tempDir } from '../support/local.ts';

const ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@e',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@e',
};
const git = (dir: string, ...args: string[]) =>
  execFileSync('git', args, { cwd: dir, env: ENV, encoding: 'utf8' }).trim();

function repo(): string {
  const dir = tempDir('episodic-repo-files-');
  git(dir, 'init', '-q', '--initial-branch=main');
  return dir;
}

test('readHead: unborn, loose, packed, detached and a linked worktree, as git rev-parse says', () => {
  const dir = repo();
  assert.equal(readHead(dir), undefined, 'a new repository has no HEAD commit');
  writeFileSync(join(dir, 'a'), 'a');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'one');
  assert.equal(readHead(dir), git(dir, 'rev-parse', 'HEAD'), 'loose ref');
  git(dir, 'pack-refs', '--all');
  assert.equal(readHead(dir), git(dir, 'rev-parse', 'HEAD'), 'packed ref');
  git(dir, 'commit', '-q', '--allow-empty', '-m', 'two');
  git(dir, 'checkout', '-q', '--detach', 'HEAD~1');
  assert.equal(readHead(dir), git(dir, 'rev-parse', 'HEAD'), 'detached');
  const linked = join(tempDir('episodic-repo-files-'), 'wt');
  git(dir, 'worktree', 'add', '-q', '-b', 'side/x', linked, 'main');
  assert.equal(readHead(linked), git(linked, 'rev-parse', 'HEAD'), 'a linked worktree');
  assert.equal(readHead(tempDir('episodic-repo-files-')), 'unknown', 'not a repository');
});

test('localIdentityConfigured: what git config --local --get user.email finds', () => {
  const dir = repo();
  assert.equal(localIdentityConfigured(dir), false);
  git(dir, 'config', 'user.name', 'Only A Name');
  assert.equal(localIdentityConfigured(dir), false);
  git(dir, 'config', 'user.email', 'owner@example.com');
  assert.equal(localIdentityConfigured(dir), true);
});

test('configSetsUserEmail: sections, subsections, comments, continuations; unreadable lines are unknown', () => {
  const cases: Array<[string, boolean | 'unknown']> = [
    ['[user]\n\temail = a@b\n', true],
    ['[User]\n\tEMAIL=a@b\n', true],
    ['[user] email = a@b\n', true],
    ['[user]\n\tname = x\n[core]\n\temail = a@b\n', false],
    ['[user "x"]\n\temail = a@b\n', false],
    ['[user.x]\n\temail = a@b\n', false],
    ['[user]\n# email = a@b\n; email = a@b\n', false],
    ['[user]\n\tname = a \\\nemail = b\n', false],
    ['[core]\n\tbare = false\n', false],
    ['[user\n', 'unknown'],
    ['[user]\n\t=oops\n', 'unknown'],
  ];
  for (const [text, want] of cases) assert.equal(configSetsUserEmail(text), want, JSON.stringify(text));
});

test('emptyTree: per object format', () => {
  assert.equal(emptyTree(), git(repo(), 'hash-object', '-t', 'tree', '/dev/null'));
  assert.equal(emptyTree('a'.repeat(64)).length, 64);
});
