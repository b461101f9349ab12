// Checkpoints end to end in local mode, with the real CLI, real git and the stand-in agent: one commit per
// episode that changed a git workspace (with its trailers, its hash in episodes.jsonl), none for an
// episode that changed nothing; and `workspace: {git}` cloned under the state directory and reused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EpisodeRecordSchema } from '../../controller/api/episode-record.ts';
import type { EpisodeRecord } from '../../controller/api/episode-record.ts';
import { readStatus, runCli, specDir, tempDir } from '../support/local.ts';
import { git } from '../support/git.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 } };

function records(stateDir: string, name: string): EpisodeRecord[] {
  const file = join(stateDir, 'logs/default', name, 'episodes.jsonl');
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => EpisodeRecordSchema.parse(JSON.parse(l)));
}

/** subject | author | Episodic-Task trailer | Episodic-Episode trailer, newest first. */
function commits(repo: string, ref = 'HEAD'): string[] {
  const format =
    '%s|%an <%ae>|%(trailers:key=Episodic-Task,valueonly,separator=)|%(trailers:key=Episodic-Episode,valueonly,separator=)';
  return git(repo, 'log', `--format=${format}`, ref).split('\n');
}

test('checkpoints: a commit per episode that changed a git workspace, none for one that did not; the hash is in the record', async () => {
  const dir = tempDir();
  const ws = join(dir, 'ws', 'work');
  mkdirSync(ws, { recursive: true });
  const episodes = {
    '1': { mode: 'continue', writeFiles: { 'a.txt': 'one\n' } },
    '2': { mode: 'continue' }, // looks around, changes nothing
    '3': { mode: 'fail', writeFiles: { 'b.txt': 'half-done\n' } },
    '4': { mode: 'success', writeFiles: { 'b.txt': 'done\n' } },
  };
  writeFileSync(join(ws, '.fake-agent.json'), JSON.stringify({ episodes }));
  git(ws, 'init', '--quiet', '--initial-branch=main');
  git(ws, 'add', '.');
  git(ws, 'commit', '--quiet', '-m', 'start');
  specDir([{ name: 'work', spec: fast }], { dir });

  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(commits(ws), [
    'episodic: work episode 4 (succeeded)|episodic <episodic@localhost>|default/work|4',
    'episodic: work episode 3 (failed)|episodic <episodic@localhost>|default/work|3',
    'episodic: work episode 1 (continue)|episodic <episodic@localhost>|default/work|1',
    'start|seed <seed@example.com>||',
  ]);
  assert.equal(git(ws, 'status', '--porcelain'), '', 'everything an episode left is in its checkpoint');
  const hashes = git(ws, 'log', '--format=%H', '-3').split('\n').reverse();
  const recs = records(join(dir, '.episodic'), 'work');
  assert.deepEqual(
    recs.map((r) => [r.number, r.outcome, r.evidence?.workspace?.changed, r.evidence?.workspace?.commit]),
    [
      [1, 'continue', true, hashes[0]],
      [2, 'continue', false, undefined],
      [3, 'failed', true, hashes[1]],
      [4, 'succeeded', true, hashes[2]],
    ],
  );
  // The next episode starts at the checkpoint: its HEAD before is the previous checkpoint.
  assert.equal(recs[1].evidence?.workspace?.headBefore, hashes[0]);
  const wide = await runCli(['get', 'work', dir, '--episodes', '-o', 'wide']);
  assert.ok(wide.stdout.split('\n')[1].includes(hashes[0].slice(0, 12)), wide.stdout);
});

test('checkpoints: a repository configured with its own identity commits as it; the state directory inside is never committed', async () => {
  const dir = tempDir();
  git(dir, 'init', '--quiet', '--initial-branch=main');
  git(dir, 'config', 'user.name', 'Repo Owner');
  git(dir, 'config', 'user.email', 'owner@example.com');
  // A hook that would hang the controller (and must never run with its rights).
  mkdirSync(join(dir, '.git/hooks'), { recursive: true });
  writeFileSync(join(dir, '.git/hooks/pre-commit'), '#!/bin/sh\nsleep 600\n', { mode: 0o755 });
  writeFileSync(
    join(dir, '.fake-agent.json'),
    JSON.stringify({
      episodes: { '1': { mode: 'continue', writeFiles: { 'x.txt': 'x' } }, '2': { mode: 'continue' } },
    }),
  );
  specDir(
    [{ name: 'here', spec: { ...fast, workspace: '.', limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 } } }],
    { dir },
  );
  git(dir, 'add', '.');
  git(dir, 'commit', '--quiet', '--no-verify', '-m', 'start');

  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1, 'two episodes, no completion: MaxEpisodesReached');
  assert.equal(readStatus(dir, 'here')?.status.reason, 'MaxEpisodesReached');
  assert.deepEqual(
    commits(dir).map((c) => c.split('|').slice(0, 2).join('|')),
    ['episodic: here episode 1 (continue)|Repo Owner <owner@example.com>', 'start|seed <seed@example.com>'],
  );
  assert.equal(git(dir, 'ls-files', '.episodic'), '', 'the state directory is not committed');
  const recs = records(join(dir, '.episodic'), 'here');
  assert.deepEqual(
    recs.map((r) => r.evidence?.workspace?.changed),
    [true, false],
    'logs written to the state directory are no change',
  );
});

test('checkpoints: workspace.git works locally: cloned under the state directory, reused, committed and pushed', async () => {
  const dir = tempDir();
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  const episodes = {
    '1': { mode: 'continue', writeFiles: { 'a.txt': 'a' } },
    '2': { mode: 'continue' },
    '3': { mode: 'success', writeFiles: { 'b.txt': 'b' } },
  };
  writeFileSync(join(seed, '.fake-agent.json'), JSON.stringify({ episodes }));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  // A relative path is a repository beside the spec file; a new branch starts from the default one.
  specDir([{ name: 'remote', spec: { ...fast, workspace: { git: { url: 'origin.git', ref: 'episodic/remote' } } } }], {
    dir,
  });

  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const clone = join(dir, '.episodic/workspaces/default/remote');
  assert.ok(existsSync(join(clone, '.git')), 'cloned under STATE/workspaces/NAMESPACE/NAME');
  assert.deepEqual(
    commits(bare, 'episodic/remote').map((c) => c.split('|')[0]),
    ['episodic: remote episode 3 (succeeded)', 'episodic: remote episode 1 (continue)', 'seed'],
  );
  assert.equal(git(bare, 'show', 'episodic/remote:a.txt'), 'a', "episode 1's work reached the remote");
  assert.equal(commits(bare, 'main').length, 1, 'main is untouched');
  const recs = records(join(dir, '.episodic'), 'remote');
  assert.equal(recs[2].evidence?.workspace?.commit, git(bare, 'rev-parse', 'episodic/remote'));
  assert.equal(
    recs[1].evidence?.workspace?.headBefore,
    recs[0].evidence?.workspace?.commit,
    "episode 2 ran in the same clone, at episode 1's checkpoint",
  );
});

test('checkpoints: a git url that git could read as an option or a command is refused, naming the field', async () => {
  const dir = specDir([{ name: 'evil', spec: { workspace: { git: { url: 'ext::sh -c touch% pwned' } } } }]);
  const res = await runCli(['validate', join(dir, 'evil.yaml')]);
  assert.notEqual(res.code, 0);
  assert.match(res.stderr, /spec\.workspace\.git\.url: remote-helper transports/);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 1);
  assert.equal(existsSync(join(dir, 'pwned')), false);
});
