// The git processes an episode's evidence and checkpoint cost (issue 27 §4), counted by a `git` on PATH that
// logs each start and runs the real git, which does all the work; and the evidence they read, per case.
// The agent's own git calls below go to the real git by its full path, so only episodic's are counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SPEC } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { WorkspaceEvidence } from '../../controller/api/leash.ts';
import { settleEpisode } from '../../controller/executors/evidence/settle.ts';
import { snapshotWorkspace } from '../../controller/executors/evidence/workspace.ts';
import type { SettledTree } from '../../controller/executors/evidence/workspace.ts';
import { tempDir } from '../support/local.ts';

const REAL_GIT = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
const AGENT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'agent',
  GIT_AUTHOR_EMAIL: 'agent@e',
  GIT_COMMITTER_NAME: 'agent',
  GIT_COMMITTER_EMAIL: 'agent@e',
};
const shimDir = tempDir('episodic-git-shim-');
const startsLog = join(shimDir, 'starts.log');
// Logs the subcommand (after any `-c name=value`), then runs the real git with the same arguments.
const SHIM = `#!/bin/sh
sub() { while [ "$1" = -c ]; do shift 2; done; echo "$1"; }
sub "$@" >>${JSON.stringify(startsLog)}
exec ${REAL_GIT} "$@"
`;
writeFileSync(join(shimDir, 'git'), SHIM);
chmodSync(join(shimDir, 'git'), 0o755);
process.env.PATH = `${shimDir}:${process.env.PATH}`;

/** The agent's git: the real one, not counted. */
function agentGit(dir: string, ...args: string[]): string {
  return execFileSync(REAL_GIT, args, { cwd: dir, env: AGENT_ENV, encoding: 'utf8' }).trim();
}

function repo(opts: { commit?: boolean } = {}): string {
  const dir = tempDir('episodic-cost-');
  agentGit(dir, 'init', '-q', '--initial-branch=main');
  if (opts.commit === false) return dir;
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  agentGit(dir, 'add', '.');
  agentGit(dir, 'commit', '-q', '-m', 'start');
  return dir;
}

interface Episode {
  evidence?: WorkspaceEvidence;
  settled?: SettledTree;
  error?: string;
  /** git processes episodic started, by subcommand. */
  git: string[];
}

/** Snapshot, the agent's work, then the settle step both executors run; the git processes in between. */
async function episode(dir: string, work: () => void, settled?: SettledTree): Promise<Episode> {
  rmSync(startsLog, { force: true });
  const before = await snapshotWorkspace(dir, { settled });
  work();
  const done = await settleEpisode(
    { workspace: dir, namespace: 'default', task: 't', episode: 1, completion: DEFAULT_SPEC.completion, before },
    episodeResult({ exitCode: 0 }),
  );
  let git: string[] = [];
  try {
    git = readFileSync(startsLog, 'utf8').split('\n').filter(Boolean);
  } catch {}
  return { evidence: done.result.evidence?.workspace, settled: done.settled, error: done.error, git };
}

const stats = (e?: WorkspaceEvidence) => [e?.changed, e?.dirty, e?.filesChanged, e?.insertions, e?.deletions];

test('checkpoint cost: the agent edits a file: 3 git processes; the diffstat, HEAD and the checkpoint', async () => {
  const dir = repo();
  const head = agentGit(dir, 'rev-parse', 'HEAD');
  const e = await episode(dir, () => writeFileSync(join(dir, 'a.txt'), 'two\nthree\n'));
  assert.equal(e.error, undefined);
  assert.deepEqual(e.git, ['status', 'add', 'commit']);
  assert.deepEqual(stats(e.evidence), [true, true, 1, 2, 1]);
  assert.deepEqual(e.evidence?.files, ['a.txt'], 'the path, from the add itself');
  assert.deepEqual([e.evidence?.headBefore, e.evidence?.headAfter], [head, head]);
  assert.equal(e.evidence?.commit, agentGit(dir, 'rev-parse', 'HEAD'));
  assert.equal(agentGit(dir, 'rev-parse', 'HEAD~1'), head, 'the checkpoint sits on the HEAD before');
  assert.equal(agentGit(dir, 'status', '--porcelain'), '');
  assert.deepEqual(e.settled, { head: e.evidence?.commit });
});

test('checkpoint cost: the next episode from a settled tree skips the status: add and commit, as a bash loop', async () => {
  const dir = repo();
  const first = await episode(dir, () => writeFileSync(join(dir, 'a.txt'), 'two\n'));
  const second = await episode(dir, () => writeFileSync(join(dir, 'b.txt'), 'b\nb\n'), first.settled);
  assert.deepEqual(second.git, ['add', 'commit']);
  assert.deepEqual(stats(second.evidence), [true, true, 1, 2, 0]);
  assert.equal(second.evidence?.headBefore, first.evidence?.commit);
  // A HEAD moved since (here by a person) is not the settled one: the snapshot asks git again.
  agentGit(dir, 'commit', '-q', '--allow-empty', '-m', 'by hand');
  const third = await episode(dir, () => {}, second.settled);
  assert.deepEqual(third.git, ['status', 'add', 'commit']);
  assert.deepEqual(stats(third.evidence), [false, false, undefined, undefined, undefined]);
});

test('checkpoint cost: the agent commits its work itself: HEAD moved, its diffstat, no checkpoint of ours', async () => {
  const dir = repo();
  const head = agentGit(dir, 'rev-parse', 'HEAD');
  const e = await episode(dir, () => {
    writeFileSync(join(dir, 'a.txt'), 'one\ntwo\nthree\n');
    writeFileSync(join(dir, 'b.txt'), 'new\n');
    agentGit(dir, 'add', '.');
    agentGit(dir, 'commit', '-q', '-m', 'work');
  });
  const agents = agentGit(dir, 'rev-parse', 'HEAD');
  assert.ok(e.git.length <= 4, e.git.join(' '));
  assert.deepEqual(stats(e.evidence), [true, false, 2, 3, 0]);
  assert.deepEqual(e.evidence?.files, ['a.txt', 'b.txt'], "the agent's commit's paths");
  assert.deepEqual([e.evidence?.headBefore, e.evidence?.headAfter, e.evidence?.commit], [head, agents, agents]);
  assert.equal(agentGit(dir, 'log', '-1', '--format=%s'), 'work');
});

test('checkpoint cost: the agent commits and leaves edits: the diffstat spans both, the checkpoint on top', async () => {
  const dir = repo();
  const head = agentGit(dir, 'rev-parse', 'HEAD');
  let agents = '';
  const e = await episode(dir, () => {
    writeFileSync(join(dir, 'b.txt'), 'new\n');
    agentGit(dir, 'add', '.');
    agentGit(dir, 'commit', '-q', '-m', 'work');
    agents = agentGit(dir, 'rev-parse', 'HEAD');
    writeFileSync(join(dir, 'a.txt'), 'one\nmore\n');
  });
  assert.ok(e.git.length <= 4, e.git.join(' '));
  assert.deepEqual(stats(e.evidence), [true, true, 2, 2, 0]);
  assert.deepEqual(e.evidence?.files, ['a.txt', 'b.txt'], 'committed and left, both');
  assert.deepEqual([e.evidence?.headBefore, e.evidence?.headAfter], [head, agents]);
  assert.equal(e.evidence?.commit, agentGit(dir, 'rev-parse', 'HEAD'));
  assert.equal(agentGit(dir, 'rev-parse', 'HEAD~1'), agents);
  assert.match(agentGit(dir, 'log', '-1', '--format=%s|%an'), /^episodic: t episode 1 \(\w+\)\|episodic$/);
});

test('checkpoint cost: no change: no new commit, unchanged and clean', async () => {
  const dir = repo();
  const head = agentGit(dir, 'rev-parse', 'HEAD');
  const e = await episode(dir, () => {});
  assert.deepEqual(e.git, ['status', 'add', 'commit'], 'the commit finds nothing to commit');
  assert.deepEqual(stats(e.evidence), [false, false, undefined, undefined, undefined]);
  assert.deepEqual([e.evidence?.headAfter, e.evidence?.commit], [head, undefined]);
  assert.equal(agentGit(dir, 'rev-parse', 'HEAD'), head);
});

test('checkpoint cost: the first episode in a fresh repository: the root commit, counted against the empty tree', async () => {
  const dir = repo({ commit: false });
  const e = await episode(dir, () => {
    writeFileSync(join(dir, 'a.txt'), 'a\n');
    writeFileSync(join(dir, 'b.txt'), 'b\nb\n');
  });
  assert.ok(e.git.length <= 4, e.git.join(' '));
  assert.deepEqual(stats(e.evidence), [true, true, 2, 3, 0]);
  assert.deepEqual([e.evidence?.headBefore, e.evidence?.headAfter], [undefined, undefined]);
  assert.equal(e.evidence?.commit, agentGit(dir, 'rev-parse', 'HEAD'));
  assert.equal(agentGit(dir, 'rev-list', '--count', 'HEAD'), '1');
});

test('checkpoint cost: untracked files and directories count, file by file, with their lines', async () => {
  const dir = repo();
  const e = await episode(dir, () => {
    mkdirSync(join(dir, 'src/deep'), { recursive: true });
    writeFileSync(join(dir, 'src/x.ts'), 'x\n');
    writeFileSync(join(dir, 'src/deep/y.ts'), 'y\ny\n');
  });
  assert.ok(e.git.length <= 4, e.git.join(' '));
  assert.deepEqual(stats(e.evidence), [true, true, 2, 3, 0]);
  assert.equal(agentGit(dir, 'ls-files', 'src'), 'src/deep/y.ts\nsrc/x.ts');
  assert.deepEqual(e.evidence?.files, ['src/deep/y.ts', 'src/x.ts']);
});

test('checkpoint cost: changed paths are kept as named (markup, escapes, RTL), the first 50, each bounded; the count is all', async () => {
  const dir = repo();
  const hostile = '<img src=x onerror=alert(1)>\x1b[31m\u202eevil.txt';
  const long = `${'d'.repeat(200)}/${'e'.repeat(200)}`;
  const e = await episode(dir, () => {
    writeFileSync(join(dir, hostile), 'h\n');
    mkdirSync(join(dir, 'd'.repeat(200)));
    writeFileSync(join(dir, long), 'l\n');
    for (let i = 0; i < 60; i++) writeFileSync(join(dir, `f${String(i).padStart(2, '0')}.txt`), `${i}\n`);
  });
  assert.ok(e.git.length <= 4, e.git.join(' '));
  assert.equal(e.evidence?.filesChanged, 62);
  const files = e.evidence?.files ?? [];
  assert.equal(files.length, 50);
  assert.ok(files.includes(hostile), 'the path as the agent named it (the page escapes it)');
  const cut = files.find((f) => f.startsWith('ddd'));
  assert.equal(cut?.length, 300);
  assert.ok(cut?.endsWith('…'));
});

test('checkpoint cost: a tree that started dirty needs one more status; pre-existing edits alone are no change', async () => {
  const dir = repo();
  writeFileSync(join(dir, 'a.txt'), 'left over\n');
  const idle = await episode(dir, () => {});
  assert.deepEqual(idle.git, ['status', 'status']);
  assert.deepEqual([idle.evidence?.changed, idle.evidence?.dirty, idle.evidence?.commit], [false, true, undefined]);
  const busy = await episode(dir, () => writeFileSync(join(dir, 'c.txt'), 'c\n'));
  assert.deepEqual(busy.git, ['status', 'status', 'add', 'commit']);
  assert.deepEqual(stats(busy.evidence), [true, true, 2, 2, 1], 'the left-over edit goes into this checkpoint');
  assert.equal(agentGit(dir, 'status', '--porcelain'), '');
});

test('checkpoint cost: a plain directory runs no git at all', async () => {
  const dir = tempDir('episodic-cost-');
  writeFileSync(join(dir, 'plan.md'), 'x');
  const e = await episode(dir, () => writeFileSync(join(dir, 'src.ts'), 'y'));
  assert.deepEqual(e.git, []);
  assert.deepEqual([e.evidence?.kind, e.evidence?.changed], ['directory', true]);
});
