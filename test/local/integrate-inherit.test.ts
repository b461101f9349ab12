// spec.integrate inherited (issue 32 §3) end to end with `episodic run`, real git and the stand-in agent:
// a forEach step's children each enter the parent's queue, so `into` gets every item's work; best-of-N's
// attempts do not, only the winner does, once its branch is the task's.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { readStatus, runCli, specDir, tempDir } from '../support/local.ts';
import { git } from '../support/git.ts';

/** origin.git: main with the agent's script, and `work` one commit ahead of it. */
function origin(tasks: Record<string, unknown>): { dir: string; bare: string } {
  const dir = tempDir();
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  writeFileSync(join(seed, '.fake-agent.json'), JSON.stringify({ tasks }));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  writeFileSync(join(seed, 'work.txt'), 'the parent branch');
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'work');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/work');
  return { dir, bare };
}

const integrate = { into: 'main', queue: 'q' };
const files = (bare: string) => git(bare, 'ls-tree', '--name-only', 'main').split('\n').sort();

test("fan-out children inherit integrate: every item's branch is integrated into main, linear", async () => {
  const tasks = Object.fromEntries(
    [0, 1, 2].map((i) => [`mig-each-${i}`, { mode: 'success', writeFiles: { [`item-${i}.txt`]: `${i}` } }]),
  );
  const { dir, bare } = origin(tasks);
  const each = { name: 'each', prompt: 'do {{item}}', forEach: { items: ['a', 'b', 'c'], maxConcurrency: 3 } };
  specDir(
    [
      {
        name: 'mig',
        spec: {
          prompt: undefined,
          workspace: { git: { url: 'origin.git', ref: 'work' } },
          integrate,
          steps: [each],
        },
      },
    ],
    { dir },
  );
  const run = await runCli(['run', dir], { timeoutMs: 120_000 });
  assert.equal(run.code, 0, run.stderr.slice(-2000));
  for (const i of [0, 1, 2]) {
    const child = readStatus(dir, `mig-each-${i}`)?.status;
    assert.equal(child?.integrate?.result, 'integrated', `mig-each-${i}: ${JSON.stringify(child?.integrate)}`);
  }
  assert.deepEqual(files(bare), ['.fake-agent.json', 'item-0.txt', 'item-1.txt', 'item-2.txt', 'work.txt']);
  assert.equal(git(bare, 'rev-list', '--merges', 'main'), '', 'linear');
});

test('attempts with integrate: only the winner enters the queue, as the task, and main gets its work alone', async () => {
  const { dir, bare } = origin({
    't-attempt-1': { mode: 'success', writeFiles: { 'small.txt': 'a\nb' } },
    't-attempt-2': { mode: 'success', writeFiles: { 'large.txt': 'a\nb\nc\nd\ne\nf\ng\nh' } },
  });
  specDir(
    [
      {
        name: 't',
        spec: {
          prompt: 'do the work',
          workspace: { git: { url: 'origin.git', ref: 'work' } },
          limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 },
          integrate,
          attempts: { count: 2 },
        },
      },
    ],
    { dir },
  );
  const run = await runCli(['run', dir], { timeoutMs: 120_000 });
  assert.equal(run.code, 0, run.stderr.slice(-2000));
  const status = readStatus(dir, 't')?.status;
  assert.equal(status?.attempts?.winner, 1, status?.message);
  assert.equal(status?.integrate?.result, 'integrated', JSON.stringify(status?.integrate));
  for (const n of [1, 2]) assert.equal(readStatus(dir, `t-attempt-${n}`)?.status.integrate, undefined, `attempt ${n}`);
  assert.deepEqual(files(bare), ['.fake-agent.json', 'small.txt', 'work.txt']);
  assert.equal(git(bare, 'rev-parse', 'main'), git(bare, 'rev-parse', 'work'), 'main is the adopted winner');
});
