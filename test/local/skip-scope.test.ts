// skipWhen and scope end to end in local mode (`episodic run`, real git, the stand-in agent): an episode that
// changes a path outside its scope stops the task (OutOfScope) or, with Revert, has it restored to the
// episode's start commit (a new file deleted) and counts as no progress; a plain directory says what it could
// not restore; a RalphSharp pipeline with a PLAN.md that has pending items skips straight to its execute step,
// and a task stopped for review there resumes in that step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAKE_CLAUDE, NODE, readStatus, runCli, specDir, tempDir } from '../support/local.ts';
import { git } from '../support/git.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 } };

function records(
  dir: string,
  name: string,
): Array<{ number: number; step?: string; outcome: string; message?: string }> {
  const file = join(dir, '.episodic', 'logs', 'default', name, 'episodes.jsonl');
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

/** A workspace with README.md and the agent's script by episode number; a git repository unless `plain`. */
function workspace(dir: string, name: string, episodes: Record<string, unknown>, plain = false): string {
  const ws = join(dir, 'ws', name);
  mkdirSync(join(ws, 'src'), { recursive: true });
  writeFileSync(join(ws, 'README.md'), 'original\n');
  writeFileSync(join(ws, 'src', 'keep.ts'), 'export {};\n');
  writeFileSync(join(ws, '.fake-agent.json'), JSON.stringify({ episodes }));
  if (!plain) {
    git(ws, 'init', '--quiet', '--initial-branch=main');
    git(ws, 'add', '.');
    git(ws, 'commit', '--quiet', '-m', 'start');
  }
  return ws;
}

test('scope NeedsReview: an episode that changes a path outside scope.paths stops the task (OutOfScope), naming it', async () => {
  const dir = tempDir();
  const ws = workspace(dir, 'scoped', {
    '1': { mode: 'success', writeFiles: { 'src/a.ts': 'a\n', 'package.json': '{}\n', 'DISCOVERY.md': 'found\n' } },
  });
  specDir([{ name: 'scoped', spec: { ...fast, scope: { paths: ['src/**'] } } }], { dir });
  const res = await runCli(['run', dir]);
  assert.notEqual(res.code, 0);
  const s = readStatus(dir, 'scoped')?.status;
  assert.equal(s?.phase, 'NeedsReview');
  assert.equal(s?.reason, 'OutOfScope');
  // DISCOVERY.md is always allowed; the episode's promise does not finish a task outside its scope.
  assert.equal(s?.message, 'episode 1 changed 1 path outside scope.paths: package.json');
  assert.equal(s?.episodes, 1);
  assert.match(
    records(dir, 'scoped')[0].message ?? '',
    /^episode 1 changed 1 path outside scope\.paths: package\.json/,
  );
  // Left for a person to see (and checkpointed like any episode's work).
  assert.equal(readFileSync(join(ws, 'package.json'), 'utf8'), '{}\n');
});

test('scope Revert (git): out-of-scope paths go back to the start commit, a new file is deleted, the episode counts as no progress', async () => {
  const dir = tempDir();
  const ws = workspace(dir, 'reverting', {
    '1': {
      mode: 'success', // a claim the reverted episode cannot make good
      writeFiles: { 'src/a.ts': 'a\n', 'README.md': 'scribbled\n', 'extra/new.txt': 'new\n', 'IDEAS.md': 'idea\n' },
    },
    '2': { mode: 'success', writeFiles: { 'src/b.ts': 'b\n' } },
  });
  const breaker = { noProgressEpisodes: 1, halfOpenEpisodes: 3, sameErrorEpisodes: 0 };
  specDir([{ name: 'reverting', spec: { ...fast, breaker, scope: { paths: ['src/**'], onViolation: 'Revert' } } }], {
    dir,
  });
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'reverting')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 2);
  const recs = records(dir, 'reverting');
  assert.deepEqual(
    recs.map((r) => [r.number, r.outcome]),
    [
      [1, 'continue'],
      [2, 'succeeded'],
    ],
  );
  assert.match(
    recs[0].message ?? '',
    /^reverted 2 paths outside scope\.paths \(README\.md, extra\/new\.txt\); no progress/,
  );
  // Restored and deleted; the in-scope work and the always-allowed IDEAS.md stay.
  assert.equal(readFileSync(join(ws, 'README.md'), 'utf8'), 'original\n');
  assert.equal(existsSync(join(ws, 'extra')), false);
  assert.equal(readFileSync(join(ws, 'src', 'a.ts'), 'utf8'), 'a\n');
  assert.equal(readFileSync(join(ws, 'IDEAS.md'), 'utf8'), 'idea\n');
  assert.equal(git(ws, 'status', '--porcelain'), '');
  assert.equal(git(ws, 'log', '-1', '--format=%s', 'HEAD~1'), 'episodic: reverting episode 1 (continue)');
  assert.equal(git(ws, 'show', 'HEAD~1:README.md'), 'original');
  // No progress: the breaker counted it (HalfOpen), and episode 2's progress closed it again.
  assert.equal(s?.breaker?.state, 'Closed');
  assert.equal(s?.workspaceChanges, 1);
  assert.match(res.stdout + res.stderr, /BreakerHalfOpen/);
});

test('scope Revert (plain directory): a new file is deleted, a changed one cannot be restored: NeedsReview naming it', async () => {
  const dir = tempDir();
  const ws = workspace(
    dir,
    'plain',
    { '1': { mode: 'continue', writeFiles: { 'new.txt': 'n\n', 'README.md': 'x\n' } } },
    true,
  );
  specDir([{ name: 'plain', spec: { ...fast, scope: { paths: ['src/**'], onViolation: 'Revert' } } }], { dir });
  const res = await runCli(['run', dir]);
  assert.notEqual(res.code, 0);
  const s = readStatus(dir, 'plain')?.status;
  assert.equal(s?.phase, 'NeedsReview');
  assert.equal(s?.reason, 'OutOfScope');
  assert.equal(s?.message, 'episode 1 changed paths outside scope.paths that could not be restored: README.md');
  assert.equal(existsSync(join(ws, 'new.txt')), false);
  assert.equal(readFileSync(join(ws, 'README.md'), 'utf8'), 'x\n');
});

test('skipWhen: a PLAN.md with pending items skips explore and plan; execute, stopped out of scope, resumes in that step', async () => {
  const dir = tempDir();
  const record = join(tempDir('episodic-skip-record-'), 'runs.jsonl');
  const ws = workspace(dir, 'ralph', {
    '3': { mode: 'continue', writeFiles: { 'src/x.ts': 'x\n', 'secrets.env': 'oops\n' } },
    '4': { mode: 'success', writeFiles: { 'src/y.ts': 'y\n', 'PLAN.md': '- [x] one\n- [x] two\n' } },
  });
  writeFileSync(join(ws, 'PLAN.md'), '- [x] one\n- [ ] two\n');
  const skipWhen = { checklistPending: 'PLAN.md' };
  const spec = {
    ...fast,
    prompt: undefined,
    agent: {
      command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'],
      env: [{ name: 'FAKE_AGENT_RECORD', value: record }],
    },
    progress: { checklist: 'PLAN.md' },
    resume: { policy: 'Manual' },
    steps: [
      { name: 'explore', prompt: 'explore', skipWhen },
      { name: 'plan', prompt: 'plan', skipWhen },
      { name: 'execute', prompt: 'execute the plan', scope: { paths: ['src/**'] } },
    ],
  };
  specDir([{ name: 'ralph', spec }], { dir });
  const first = await runCli(['run', dir]);
  assert.notEqual(first.code, 0);
  let s = readStatus(dir, 'ralph')?.status;
  assert.equal(s?.phase, 'NeedsReview');
  assert.equal(s?.reason, 'OutOfScope');
  assert.match(s?.message ?? '', /^step 3\/3 execute: episode 3 changed 1 path outside scope\.paths: secrets\.env$/);
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.reason, x.episodes]),
    [
      ['explore', 'Skipped', 'SkipWhen', 0],
      ['plan', 'Skipped', 'SkipWhen', 0],
      ['execute', 'NeedsReview', 'OutOfScope', 1],
    ],
  );

  const resume = await runCli(['resume', 'ralph', dir, '--by', 'alice']);
  assert.equal(resume.code, 0, resume.stderr);
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  s = readStatus(dir, 'ralph')?.status;
  assert.equal(s?.phase, 'Succeeded');
  // A skip is a step record, not an episode (issue 28): two ran an agent, two numbers went to skipWhen checks.
  assert.equal(s?.episodes, 2);
  assert.equal(s?.skippedSteps, 2);
  assert.match(s?.message ?? '', /episode 4 finished the task \([A-Za-z]+\); 2 episodes ran, 2 steps skipped/);
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.episodes]),
    [
      ['explore', 'Skipped', 0],
      ['plan', 'Skipped', 0],
      ['execute', 'Succeeded', 2],
    ],
  );
  assert.deepEqual(
    records(dir, 'ralph').map((r) => [r.number, r.step, r.outcome]),
    [
      [1, 'explore', 'skipped'],
      [2, 'plan', 'skipped'],
      [3, 'execute', 'continue'],
      [4, 'execute', 'succeeded'],
    ],
  );
  assert.match(records(dir, 'ralph')[0].message ?? '', /^skipWhen: PLAN\.md has 1 pending item$/);
  // Only execute's episodes ran an agent.
  const runs = readFileSync(record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    runs.map((r: { env: Record<string, string> }) => `${r.env.EPISODIC_EPISODE} ${r.env.EPISODIC_STEP}`),
    ['3 execute', '4 execute'],
  );
});
