// A fan-out step survives kill -9 of the controller (issue 32 §1): killed while two of six children have
// finished and two more are running, the restarted controller makes no item's child twice and misses none,
// never runs more than maxConcurrency children at once (read from the episode records' times, across the
// restart), ends the step by its failurePolicy and leaves no stray worktree or lock behind.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { readRecords } from '../../controller/sinks/local/episode-records.ts';
import { createdDir, episodesPath, workspacesDir } from '../../controller/util/state-layout.ts';
import { FAKE_CLAUDE, NODE, readStatus, specDir, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { git } from '../support/git.ts';

const NAMES = Array.from({ length: 6 }, (_, i) => `mig-each-${i}`);

/** origin.git whose main carries the stand-in agent's script: items 2 and 3 wait for `go`, item 5 fails. */
function origin(dir: string, go: string): string {
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  const tasks = Object.fromEntries(
    NAMES.map((name, i) => {
      const step = { mode: i === 5 ? 'fail' : 'success', delayMs: 200, writeFiles: { [`item-${i}.txt`]: `${i}` } };
      return [name, i === 2 || i === 3 ? { ...step, waitForFile: go } : step];
    }),
  );
  writeFileSync(join(seed, '.fake-agent.json'), JSON.stringify({ tasks }));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  return bare;
}

interface Span {
  name: string;
  start: number;
  end: number;
  outcome: string;
}

async function spansOf(stateDir: string): Promise<Span[]> {
  const spans: Span[] = [];
  for (const name of NAMES) {
    for (const r of await readRecords(episodesPath(stateDir, 'default', name)))
      spans.push({
        name,
        start: Date.parse(r.startedAt ?? ''),
        end: Date.parse(r.finishedAt ?? ''),
        outcome: r.outcome,
      });
  }
  return spans;
}

test('fan-out: kill -9 with two children done and two running → restart makes each child once, within maxConcurrency, by the policy', async () => {
  const dir = tempDir();
  const go = join(dir, 'go');
  origin(dir, go);
  specDir(
    [
      {
        name: 'mig',
        spec: {
          prompt: undefined,
          agent: { command: [NODE, FAKE_CLAUDE], output: 'claude' },
          workspace: { git: { url: 'origin.git', ref: 'main' } },
          limits: { maxEpisodes: 3, episodeTimeoutSeconds: 60 },
          steps: [
            {
              name: 'each',
              prompt: 'do item {{item.index}}',
              forEach: { items: ['a', 'b', 'c', 'd', 'e', 'f'], maxConcurrency: 2, failurePolicy: { atLeast: 5 } },
            },
          ],
        },
      },
    ],
    { dir },
  );
  const stateDir = join(dir, '.episodic');
  const run = startCli(['run', dir]);
  // Items 0 and 1 are recorded; 2 and 3 were made in their place and their episodes wait for `go`.
  await waitFor(
    'two children recorded and two running',
    async () => {
      const done = (await spansOf(stateDir)).length === 2;
      return done && ['mig-each-2', 'mig-each-3'].every((n) => readStatus(dir, n)?.status.currentEpisode);
    },
    90_000,
  );
  const killedEpisodes = ['mig-each-2', 'mig-each-3'].map((n) => readStatus(dir, n)?.status.currentEpisode?.number);
  run.child.kill('SIGKILL');
  await run.exited;

  // `go` only once the restart has ended the killed controller's episodes and started new ones: written
  // earlier, an orphaned episode could finish before the restart, which then settles it from its log instead.
  const restart = startCli(['run', dir]);
  await waitFor(
    'the restart runs new episodes of items 2 and 3',
    async () =>
      ['mig-each-2', 'mig-each-3'].every((n, i) => {
        const now = readStatus(dir, n)?.status.currentEpisode?.number;
        return now !== undefined && now !== killedEpisodes[i];
      }),
    90_000,
  );
  writeFileSync(go, '');
  const code = await restart.exited;
  assert.equal(code, 1, `item 5 fails, so run says a task did not succeed: ${restart.output()}`);
  const parent = readStatus(dir, 'mig')?.status;
  assert.equal(parent?.phase, 'Succeeded', parent?.message);
  assert.deepEqual(parent?.steps?.[0]?.forEach, { total: 6, created: 6, running: 0, succeeded: 5, failed: 1 });

  // Each item's child made once: one spec in the created store per item, nothing else.
  assert.deepEqual(readdirSync(join(createdDir(stateDir), 'default')).sort(), NAMES.map((n) => `${n}.yaml`).sort());
  for (const [i, name] of NAMES.entries()) {
    const status = readStatus(dir, name)?.status;
    if (i === 5) assert.notEqual(status?.phase, 'Succeeded', 'item 5 fails');
    else assert.equal(status?.phase, 'Succeeded', `${name}: ${status?.message}`);
  }
  const spans = await spansOf(stateDir);
  for (const [i, name] of NAMES.entries()) {
    const succeeded = spans.filter((s) => s.name === name && s.outcome === 'succeeded').length;
    assert.equal(succeeded, i === 5 ? 0 : 1, `${name}'s work done once: ${JSON.stringify(spans)}`);
  }
  // The killed controller's two running episodes were ended by the restart and run again.
  for (const name of ['mig-each-2', 'mig-each-3'])
    assert.ok(spans.filter((s) => s.name === name).length >= 2, `${name} ran again after the restart`);

  // At each episode's start, the children's episodes that had started and not yet ended (across the restart).
  const most = Math.max(...spans.map((s) => spans.filter((o) => o.start <= s.start && o.end > s.start).length));
  assert.ok(most <= 2, `at most 2 children ran at once, saw ${most}: ${JSON.stringify(spans)}`);

  // No stray worktree or lock: each child's clone is whole and clean, and nothing else is in the workspaces.
  const workspaces = join(workspacesDir(stateDir), 'default');
  const dirs = readdirSync(workspaces);
  assert.deepEqual(
    dirs.filter((d) => d !== 'mig').sort(),
    [...NAMES].sort(),
    `one workspace per child and the parent's: ${dirs}`,
  );
  for (const name of NAMES) {
    const ws = join(workspaces, name);
    for (const f of ['index.lock', 'rebase-merge', 'rebase-apply', 'worktrees'])
      assert.equal(existsSync(join(ws, '.git', f)), false, `${name}: .git/${f}`);
    assert.equal(git(ws, 'worktree', 'list').split('\n').length, 1, `${name}: one worktree`);
  }
});
