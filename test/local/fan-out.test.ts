// Fan-out steps end to end with `episodic run` (issue 32 §1): a planner step publishes six items, a forEach
// step makes one child task per item (never more than maxConcurrency running, read from the children's
// episode records), one child fails and {atLeast: 5} lets the step succeed; the next step reads
// {{steps.each.items}}, and `episodic get` shows the children under their parent.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { readRecords } from '../../controller/sinks/local/episode-records.ts';
import { episodesPath } from '../../controller/util/state-layout.ts';
import { startConsoleCli } from '../support/browser.ts';
import { FAKE_CLAUDE, NODE, readStatus, recordedPrompts, runCli, specDir, tempDir } from '../support/local.ts';
import { git } from '../support/git.ts';

const ITEMS = JSON.stringify(Array.from({ length: 6 }, (_, i) => ({ pkg: `pkg-${i}` })));

test('six items from a planner, maxConcurrency 2, one failing under atLeast 5: the step succeeds', async () => {
  const record = 'runs.jsonl';
  const dir = specDir([
    {
      name: 'mig',
      spec: {
        prompt: undefined,
        agent: { command: [NODE, FAKE_CLAUDE], output: 'claude' },
        limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 },
        steps: [
          { name: 'plan', prompt: 'plan the migration' },
          {
            name: 'each',
            prompt: 'migrate {{item.pkg}} (item {{item.index}})',
            limits: { maxEpisodes: 1 },
            forEach: { fromOutput: 'steps.plan.outputs.items', maxConcurrency: 2, failurePolicy: { atLeast: 5 } },
          },
          { name: 'report', prompt: 'report on {{steps.each.items}}' },
        ],
      },
      script: {
        record,
        default: { mode: 'success', delayMs: 400 },
        tasks: { mig: { mode: 'success', outputs: { items: ITEMS } }, 'mig-each-3': { mode: 'fail' } },
      },
    },
  ]);
  const run = await runCli(['run', dir], { timeoutMs: 120_000 });
  // The failed child is a task that did not succeed: `run` says so in its exit code.
  assert.equal(run.code, 1, run.stderr);

  const parent = readStatus(dir, 'mig')?.status;
  assert.equal(parent?.phase, 'Succeeded', parent?.message);
  assert.equal(parent?.steps?.[1]?.phase, 'Succeeded');
  assert.deepEqual(parent?.steps?.[1]?.forEach, { total: 6, created: 6, running: 0, succeeded: 5, failed: 1 });

  const names = Array.from({ length: 6 }, (_, i) => `mig-each-${i}`);
  const stateDir = join(dir, '.episodic');
  const spans: Array<{ name: string; start: number; end: number }> = [];
  for (const name of names) {
    const status = readStatus(dir, name)?.status;
    assert.equal(status?.phase, name === 'mig-each-3' ? 'NeedsReview' : 'Succeeded', `${name}: ${status?.message}`);
    const records = await readRecords(episodesPath(stateDir, 'default', name));
    assert.equal(records.length, 1, name);
    spans.push({ name, start: Date.parse(records[0].startedAt ?? ''), end: Date.parse(records[0].finishedAt ?? '') });
  }
  // At every episode's start, how many children's episodes had started and not yet finished.
  const most = Math.max(...spans.map((s) => spans.filter((o) => o.start <= s.start && o.end > s.start).length));
  assert.ok(most <= 2, `at most 2 children ran at once, saw ${most}`);
  assert.equal(most, 2, 'two ran at once (maxConcurrency is used)');

  const prompts = recordedPrompts(join(dir, 'ws', 'mig', record));
  for (let i = 0; i < 6; i++) assert.ok(prompts.includes(`migrate pkg-${i} (item ${i})`), `the prompt of item ${i}`);
  const report = prompts.find((p) => p.startsWith('report on '));
  const items = JSON.parse(report?.slice('report on '.length) ?? '[]');
  assert.deepEqual(
    items.map((e: { task: string; phase: string }) => `${e.task} ${e.phase}`),
    names.map((n) => `${n} ${n === 'mig-each-3' ? 'NeedsReview' : 'Succeeded'}`),
  );

  const get = await runCli(['get', 'mig', dir]);
  assert.equal(get.code, 0, get.stderr);
  assert.match(get.stdout, /Children \(6\):/);
  for (const name of names) assert.match(get.stdout, new RegExp(`${name}\\s+(Succeeded|NeedsReview)`));

  // The console's task page gets them too (its detail API, which the page renders as "Children").
  const server = await startConsoleCli(dir);
  try {
    const detail = (await (await fetch(`${server.url}/api/tasks/default/mig`)).json()) as {
      children?: Array<{ name: string; phase: string }>;
    };
    assert.deepEqual(
      detail.children?.map((c) => `${c.name} ${c.phase}`),
      names.map((n) => `${n} ${n === 'mig-each-3' ? 'NeedsReview' : 'Succeeded'}`),
    );
  } finally {
    server.child.kill('SIGINT');
    await server.exited;
  }
});

test('a git workspace: each child works on episodic/TASK/STEP-INDEX in its own clone, all from the parent branch’s commit', async () => {
  const dir = tempDir();
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  const tasks = Object.fromEntries(
    [0, 1, 2].map((i) => [`mig-each-${i}`, { mode: 'success', writeFiles: { [`item-${i}.txt`]: `${i}` } }]),
  );
  writeFileSync(join(seed, '.fake-agent.json'), JSON.stringify({ tasks }));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  // The parent's branch is ahead of the default one: children start from it, not from main.
  writeFileSync(join(seed, 'dev.txt'), 'dev');
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'dev');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/dev');
  const start = git(bare, 'rev-parse', 'dev');
  specDir(
    [
      {
        name: 'mig',
        spec: {
          prompt: undefined,
          workspace: { git: { url: 'origin.git', ref: 'dev' } },
          steps: [{ name: 'each', prompt: 'do {{item}}', forEach: { items: ['a', 'b', 'c'], maxConcurrency: 3 } }],
        },
      },
    ],
    { dir },
  );
  const run = await runCli(['run', dir], { timeoutMs: 120_000 });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(readStatus(dir, 'mig')?.status.phase, 'Succeeded');
  for (const i of [0, 1, 2]) {
    const branch = `episodic/mig/each-${i}`;
    assert.equal(git(bare, 'rev-parse', `${branch}~1`), start, `${branch} starts at dev's commit`);
    assert.equal(git(bare, 'show', `${branch}:item-${i}.txt`), `${i}`, `item ${i}'s work is on its branch`);
    assert.equal(
      git(bare, 'ls-tree', '--name-only', branch)
        .split('\n')
        .filter((f) => f.startsWith('item-')).length,
      1,
    );
    assert.ok(existsSync(join(dir, `.episodic/workspaces/default/mig-each-${i}/.git`)), 'its own clone');
  }
  assert.equal(git(bare, 'rev-parse', 'dev'), start, 'the parent branch is untouched');
});
