// Best-of-N end to end with `episodic run`, real git and the stand-in agent (issue 32 §2): three attempts of a
// gated pipeline on their own branches from the same commit; one fails its gate, two pass with different diff
// sizes. evidence → the smaller passing one wins; a judge writing 2 → attempt 2; a judge writing garbage →
// evidence, and the status says so.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  FAKE_CLAUDE,
  NODE,
  readStatus,
  recordedPrompts,
  runCli,
  specDir,
  startCli,
  tempDir,
} from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { git } from '../support/git.ts';

const heads = (bare: string) => git(bare, 'for-each-ref', '--format=%(refname:short)', 'refs/heads').split('\n').sort();

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i}`).join('\n');

/** A repository whose agent script makes attempt 1 fail the gate, attempt 2 write 30 lines, attempt 3 write 5. */
function repoWithAttempts(): { dir: string; bare: string; start: string } {
  const dir = tempDir();
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  const tasks: Record<string, unknown> = {
    't-attempt-1': { mode: 'success', writeFiles: { 'bad.txt': 'breaks the gate' } },
    't-attempt-2': { mode: 'success', writeFiles: { 'work.txt': lines(30) } },
    't-attempt-3': { mode: 'success', writeFiles: { 'work.txt': lines(5) }, delayMs: 1500 },
  };
  writeFileSync(join(seed, '.fake-agent.json'), JSON.stringify({ tasks }));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  return { dir, bare, start: git(bare, 'rev-parse', 'main') };
}

function bestOf3(dir: string, attempts: Record<string, unknown>, judgeScript?: string): void {
  specDir(
    [
      {
        name: 't',
        spec: {
          prompt: undefined,
          workspace: { git: { url: 'origin.git', ref: 'main' } },
          limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30, maxCostUSD: 5 },
          steps: [
            {
              name: 'work',
              prompt: 'do the work',
              gates: [
                {
                  name: 'no-bad',
                  check: [NODE, '-e', "process.exit(require('fs').existsSync('bad.txt') ? 1 : 0)"],
                  maxFixEpisodes: 1,
                },
              ],
            },
          ],
          attempts: { count: 3, ...attempts },
        },
      },
    ],
    { dir },
  );
  // The judge's workspace is its own directory: its script goes there.
  if (judgeScript) {
    const ws = join(dir, '.episodic/workspaces/default/t-judge');
    execFileSync('mkdir', ['-p', ws]);
    writeFileSync(join(ws, '.fake-agent.json'), judgeScript);
  }
}

const judgeAgent = {
  prompt: 'Pick the best:\n{{attempts}}\nWrite <output name="winner">N</output>.',
  agent: { command: [NODE, FAKE_CLAUDE] },
};

test('best-of-3 by evidence: the gate-failing attempt loses, the smaller passing one wins; every attempt on record', async () => {
  const { dir, bare, start } = repoWithAttempts();
  bestOf3(dir, { select: 'evidence' });
  const run = await runCli(['run', dir], { timeoutMs: 150_000 });
  const status = readStatus(dir, 't')?.status;
  assert.equal(status?.phase, 'Succeeded', `${status?.message}\n${run.stderr.slice(-2000)}`);
  assert.equal(status?.attempts?.winner, 3);
  assert.equal(status?.attempts?.selectedBy, 'evidence');
  assert.equal(status?.outputs?.branch, 'episodic/t/attempt-3');
  assert.match(status?.message ?? '', /attempt 3 of 3 won by evidence: branch episodic\/t\/attempt-3/);
  const byNumber = status?.attempts?.candidates ?? [];
  assert.deepEqual(
    byNumber.map((c) => [c.number, c.phase, c.gatesPassed, c.changedLines]),
    [
      [1, 'Failed', false, 1], // GateFailed: fewer lines, but its gate failed
      [2, 'Succeeded', true, 30],
      [3, 'Succeeded', true, 5],
    ],
  );
  for (const c of byNumber) {
    assert.ok(c.costUSD > 0, `attempt ${c.number}'s cost is counted`);
    // Each attempt's own clone (its branch is gone from the remote once the winner is adopted).
    const clone = join(dir, `.episodic/workspaces/default/t-attempt-${c.number}`);
    assert.equal(git(clone, 'merge-base', start, 'HEAD'), start, 'from the same commit');
  }
  assert.equal(git(bare, 'show', 'episodic/t/attempt-3:work.txt'), lines(5));
  // The winner is the task's result: its branch (main) is the winner's commit, in its workspace too; the losers' go.
  assert.equal(git(bare, 'rev-parse', 'main'), git(bare, 'rev-parse', 'episodic/t/attempt-3'));
  assert.equal(status?.attempts?.adopted?.commit, git(bare, 'rev-parse', 'main'));
  assert.equal(readFileSync(join(dir, '.episodic/workspaces/default/t/work.txt'), 'utf8'), lines(5));
  assert.deepEqual(heads(bare), ['episodic/t/attempt-3', 'main']);
  assert.deepEqual(status?.attempts?.adopted?.deletedBranches, ['episodic/t/attempt-1', 'episodic/t/attempt-2']);
  assert.match(status?.message ?? '', /; main is now its [0-9a-f]{12}$/);
});

test('best-of-3 with a judge: the judge writing 2 makes attempt 2 the winner; keepLosers keeps the others', async () => {
  const { dir, bare } = repoWithAttempts();
  bestOf3(
    dir,
    { select: 'judge', judge: judgeAgent, keepLosers: true },
    JSON.stringify({ record: 'runs.jsonl', default: { mode: 'success', outputs: { winner: '2' } } }),
  );
  await runCli(['run', dir], { timeoutMs: 150_000 });
  // The judge saw each candidate's evidence and its diff against the commit the attempts started from.
  const [prompt] = recordedPrompts(join(dir, '.episodic/workspaces/default/t-judge/runs.jsonl'));
  for (const n of [1, 2, 3])
    assert.match(prompt ?? '', new RegExp(`--- attempt ${n} diff \\(episodic/t/attempt-${n}\\) ---`));
  assert.match(prompt ?? '', /\+\+\+ b\/bad\.txt\n@@ -0,0 \+1 @@\n\+breaks the gate/);
  assert.match(prompt ?? '', /work\.txt \| 5 \+{5}/);
  assert.match(prompt ?? '', /"number":3,"task":"t-attempt-3"/);
  const status = readStatus(dir, 't')?.status;
  assert.equal(status?.phase, 'Succeeded', status?.message);
  assert.equal(status?.attempts?.winner, 2);
  assert.equal(status?.attempts?.selectedBy, 'judge');
  assert.equal(status?.attempts?.judgeFallback, undefined);
  assert.equal(status?.outputs?.branch, 'episodic/t/attempt-2');
  assert.equal(readStatus(dir, 't-judge')?.status.phase, 'Succeeded');
  assert.equal(git(bare, 'rev-parse', 'main'), git(bare, 'rev-parse', 'episodic/t/attempt-2'));
  assert.deepEqual(heads(bare), ['episodic/t/attempt-1', 'episodic/t/attempt-2', 'episodic/t/attempt-3', 'main']);
  assert.deepEqual(status?.attempts?.adopted?.keptBranches, ['episodic/t/attempt-1', 'episodic/t/attempt-3']);
});

test('best-of-3 with a judge writing garbage: evidence chooses, and the status says why', async () => {
  const { dir } = repoWithAttempts();
  bestOf3(
    dir,
    { select: 'judge', judge: judgeAgent },
    JSON.stringify({ default: { mode: 'success', outputs: { winner: 'the second one, surely' } } }),
  );
  await runCli(['run', dir], { timeoutMs: 150_000 });
  const status = readStatus(dir, 't')?.status;
  assert.equal(status?.attempts?.winner, 3);
  assert.equal(status?.attempts?.selectedBy, 'evidence');
  assert.match(status?.attempts?.judgeFallback ?? '', /is no attempt's number/);
  assert.match(
    status?.message ?? '',
    /won by evidence \(the judge's winner "the second one, surely" is no attempt's number; evidence chose instead\)/,
  );
});

test("attempts on a step: the smaller attempt's branch becomes the task's, and the next step works on it", async () => {
  const dir = tempDir();
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  const tasks = {
    't-impl-attempt-1': { mode: 'success', writeFiles: { 'impl.txt': lines(20) } },
    't-impl-attempt-2': { mode: 'success', writeFiles: { 'impl.txt': lines(4) } },
    t: { mode: 'success', writeFiles: { 'report.txt': 'reported' } },
  };
  writeFileSync(join(seed, '.fake-agent.json'), JSON.stringify({ tasks }));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  const steps = [
    { name: 'impl', prompt: 'implement', attempts: { count: 2 } },
    { name: 'report', prompt: 'report on it' },
  ];
  const spec = { prompt: undefined, workspace: { git: { url: 'origin.git', ref: 'main' } }, steps };
  specDir([{ name: 't', spec: { ...spec, limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 } } }], { dir });
  const run = await runCli(['run', dir], { timeoutMs: 150_000 });
  const status = readStatus(dir, 't')?.status;
  assert.equal(status?.phase, 'Succeeded', `${status?.message}\n${run.stderr.slice(-2000)}`);
  assert.equal(status?.steps?.[0]?.outputs?.branch, 'episodic/t-impl/attempt-2');
  assert.equal(status?.attempts?.winner, 2);
  assert.equal(git(bare, 'show', 'main:impl.txt'), lines(4), "the winner's work is on the task's branch");
  assert.equal(git(bare, 'show', 'main:report.txt'), 'reported', 'the next step worked on top of it');
  assert.deepEqual(heads(bare), ['episodic/t-impl/attempt-2', 'main']);
});

test('kill -9 mid-attempts: after a restart no attempt is lost or made twice, and the winner is adopted once', async () => {
  const { dir, bare } = repoWithAttempts();
  bestOf3(dir, { select: 'evidence' });
  const run = startCli(['run', dir]);
  // Attempt 3's agent takes 1.5 s: the controller dies while it works, the others made (maybe ended).
  const running = () => readStatus(dir, 't-attempt-3')?.status.phase === 'Running';
  await waitFor("attempt 3's episode running", running, 60_000);
  run.child.kill('SIGKILL');
  await run.exited;
  const res = await runCli(['run', dir], { timeoutMs: 150_000 });
  const status = readStatus(dir, 't')?.status;
  assert.equal(status?.phase, 'Succeeded', `${status?.message}\n${res.stderr.slice(-2000)}`);
  const why = [1, 2, 3].map((n) => JSON.stringify(readStatus(dir, `t-attempt-${n}`)?.status)).join('\n');
  assert.equal(status?.attempts?.winner, 3, `${JSON.stringify(status?.attempts?.candidates)}\n${why}`);
  const tasks = readdirSync(join(dir, '.episodic/workspaces/default')).filter((n) => n.startsWith('t-attempt-'));
  assert.deepEqual(tasks.sort(), ['t-attempt-1', 't-attempt-2', 't-attempt-3'], 'three attempts, none doubled');
  assert.equal(git(bare, 'show', 'main:work.txt'), lines(5), "the winner's work once");
  assert.deepEqual(heads(bare), ['episodic/t/attempt-3', 'main']);
});
