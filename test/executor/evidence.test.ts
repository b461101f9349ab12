// Evidence from real workspaces: git repositories driven by the real git, plain directories, plan files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { countChecklist } from '../../controller/executors/evidence/checklist.ts';
import { errorFingerprint } from '../../controller/executors/evidence/fingerprint.ts';
import { DEFAULT_SPEC } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { settleEpisode } from '../../controller/executors/evidence/settle.ts';
import { snapshotWorkspace } from '../../controller/executors/evidence/workspace.ts';
import { tempDir } from '../support/local.ts';
import { git } from '../support/git.ts';

function gitRepo(): string {
  const dir = tempDir('episodic-evidence-');
  git(dir, 'init', '-q');
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'first');
  return dir;
}

/** The snapshot before, the work, and the step both executors run after an episode (evidence, checkpoint). */
async function across(dir: string, work: () => void) {
  const before = await snapshotWorkspace(dir);
  assert.ok(before);
  work();
  const done = await settleEpisode(
    { workspace: dir, namespace: 'default', task: 't', episode: 1, completion: DEFAULT_SPEC.completion, before },
    episodeResult({ exitCode: 0 }),
  );
  assert.equal(done.error, undefined);
  const e = done.result.evidence?.workspace;
  assert.ok(e);
  return e;
}

test('evidence: a git workspace left alone is unchanged and clean', async () => {
  const dir = gitRepo();
  const e = await across(dir, () => {});
  assert.deepEqual([e.kind, e.changed, e.dirty], ['git', false, false]);
  assert.equal(e.headBefore, e.headAfter);
});

test('evidence: a commit moves HEAD, with its diffstat', async () => {
  const dir = gitRepo();
  const e = await across(dir, () => {
    writeFileSync(join(dir, 'a.txt'), 'one\ntwo\nthree\n');
    writeFileSync(join(dir, 'b.txt'), 'new\n');
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'work');
  });
  assert.equal(e.changed, true);
  assert.notEqual(e.headBefore, e.headAfter);
  assert.deepEqual([e.filesChanged, e.insertions, e.deletions, e.dirty], [2, 3, 0, false]);
});

test('evidence: uncommitted and untracked changes are changes, and leave the tree dirty', async () => {
  const dir = gitRepo();
  const e = await across(dir, () => {
    writeFileSync(join(dir, 'a.txt'), 'changed\n');
    writeFileSync(join(dir, 'untracked.txt'), 'x\n');
  });
  assert.deepEqual([e.changed, e.dirty, e.filesChanged], [true, true, 2]);
  assert.equal(e.headBefore, e.headAfter);
});

test('evidence: a plain directory by fingerprint; .git-less node_modules changes are ignored', async () => {
  const dir = tempDir('episodic-evidence-');
  writeFileSync(join(dir, 'plan.md'), 'x');
  mkdirSync(join(dir, 'node_modules'));
  const quiet = await across(dir, () => writeFileSync(join(dir, 'node_modules', 'dep.js'), 'y'));
  assert.deepEqual([quiet.kind, quiet.changed], ['directory', false]);
  const busy = await across(dir, () => writeFileSync(join(dir, 'src.ts'), 'z'));
  assert.equal(busy.changed, true);
  const resized = await across(dir, () => writeFileSync(join(dir, 'plan.md'), 'xx'));
  assert.equal(resized.changed, true);
});

test('evidence: a directory past the walk cap says its evidence is truncated', async () => {
  const dir = tempDir('episodic-evidence-');
  for (let i = 0; i < 10_050; i++) writeFileSync(join(dir, `f${i}`), '');
  const e = await across(dir, () => {});
  assert.equal(e.truncated, true);
});

test('evidence: Markdown checklists with RalphSharp markers, and prd.json stories', () => {
  const md = [
    '# Plan',
    '- [x] one',
    '- [X] two',
    '- [ ] three',
    '* [~] four',
    '1. [!] five',
    '- [S] six',
    'not - [x] an item',
    '  - [x] nested',
  ].join('\n');
  assert.deepEqual(countChecklist(md, 'PLAN.md'), { done: 3, total: 7, inProgress: 1, failed: 1, skipped: 1 });
  const prd = JSON.stringify({ userStories: [{ id: 1, passes: true }, { id: 2, passes: false }, { id: 3 }] });
  assert.deepEqual(countChecklist(prd, 'prd.json'), { done: 1, total: 3, inProgress: 0, failed: 0, skipped: 0 });
  assert.deepEqual(countChecklist('{not json', 'prd.json').total, 0);
});

test('evidence: error fingerprints ignore numbers, paths, ids and times', () => {
  const a = errorFingerprint(
    'Error: ENOENT: no such file /tmp/ws-123/src/a.ts at 2026-11-23T10:00:00Z (request 7f3a9c1e-1111-4222-8333-444455556666), line 42',
  );
  const b = errorFingerprint(
    'Error: ENOENT: no such file /tmp/ws-987/src/b.ts at 2026-11-24T11:30:00Z (request 00000000-1111-4222-8333-444455556666), line 7',
  );
  assert.equal(a, b);
  assert.notEqual(a, errorFingerprint('TypeError: x is not a function'));
  assert.equal(errorFingerprint(''), undefined);
  assert.ok((errorFingerprint('x'.repeat(5000)) ?? '').length <= 200);
});
