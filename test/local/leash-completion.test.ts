// Completion on evidence, end to end in local mode: an agent that echoes its prompt (which names the
// sentinel) never completes, and completion.signals finishes a task on its score, shown per episode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAKE_CLAUDE, NODE, readStatus, runCli, specDir } from '../support/local.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 } };
const PROMPT = 'Fix the failing test.\nWhen it passes, print <promise>DONE</promise> and nothing else.';

function episodeLogs(dir: string, name: string): string {
  const logs = join(dir, '.episodic', 'logs', 'default', name);
  return readdirSync(logs)
    .filter((f) => f.endsWith('.log'))
    .map((f) => readFileSync(join(logs, f), 'utf8'))
    .join('\n');
}

test('leash: an agent that echoes a prompt naming the sentinel never completes (text and stream-json)', async () => {
  const task = (name: string, command: string[], output: string, then = 'continue') => ({
    name,
    spec: {
      ...fast,
      prompt: PROMPT,
      agent: { command, output },
      completion: { promise: 'DONE' },
      limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 },
    },
    script: { default: { mode: 'echo-prompt', then, promise: 'DONE' } },
  });
  const dir = specDir([
    task('echo-text', [NODE, FAKE_CLAUDE, '-p', '--output-format', 'text'], 'text'),
    task('echo-stream', [NODE, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'], 'auto'),
    // The control: the same echo followed by a real claim in the answer finishes.
    task('echo-then-done', [NODE, FAKE_CLAUDE, '-p', '--output-format', 'text'], 'text', 'success'),
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1, res.stderr);
  for (const name of ['echo-text', 'echo-stream']) {
    const s = readStatus(dir, name)?.status;
    assert.equal(s?.reason, 'MaxEpisodesReached', name);
    assert.equal(s?.episodes, 2, name);
    assert.equal(s?.lastEpisode?.outcome, 'continue', name);
    // The sentinel was in the output, as an echo of the prompt.
    assert.match(episodeLogs(dir, name), /print <promise>DONE<\/promise> and nothing else/, name);
  }
  const done = readStatus(dir, 'echo-then-done')?.status;
  assert.equal(done?.phase, 'Succeeded');
  assert.equal(done?.reason, 'PromiseDetected');
  assert.equal(done?.episodes, 1);
});

const ralph = (workType: string, exit = false) =>
  `Ran the suite.\n---RALPH_STATUS---\nSTATUS: IN_PROGRESS\nTESTS_STATUS: PASSING\nWORK_TYPE: ${workType}\nEXIT_SIGNAL: ${exit}\n---END_RALPH_STATUS---`;

test('leash: completion.signals finishes on three test-only episodes; each score is in the record and episodic get --episodes', async () => {
  const episodes = {
    '1': { mode: 'continue', text: ralph('IMPLEMENTATION'), writeFiles: { 'src.txt': 'code' } },
    '2': { mode: 'continue', text: ralph('TESTING') },
    '3': { mode: 'continue', text: `${ralph('TESTING', true)}` }, // EXIT_SIGNAL alone: 50 < 60
    '4': { mode: 'continue', text: ralph('TESTING') },
  };
  const dir = specDir([
    {
      name: 'saturated',
      spec: {
        ...fast,
        completion: { signals: { threshold: 60 } },
        limits: { maxEpisodes: 10, episodeTimeoutSeconds: 30 },
      },
      script: { episodes, default: { mode: 'continue', writeFiles: { 'more.txt': 'never reached' } } },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'saturated')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.reason, 'SignalsScore');
  assert.equal(s?.episodes, 4);
  assert.equal(s?.testOnlyEpisodes, 3);
  assert.match(s?.message ?? '', /episode 4 finished the task \(SignalsScore: score 100 \(testOnly\+100\)\)/);

  const records = readFileSync(join(dir, '.episodic', 'logs', 'default', 'saturated', 'episodes.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome, r.completionScore, r.evidence?.ralph?.workType]),
    [
      [1, 'continue', 0, 'IMPLEMENTATION'],
      [2, 'continue', 0, 'TESTING'],
      [3, 'continue', 50, 'TESTING'],
      [4, 'succeeded', 100, 'TESTING'],
    ],
  );
  const table = await runCli(['get', 'saturated', dir, '--episodes']);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /EPISODE\s+OUTCOME\s+EXIT\s+DURATION\s+COST\s+OPS\s+FINISHED\s+REASON\s+SCORE\n/);
  assert.match(table.stdout, /\n3\s+continue\s+0\s+\d+\.\ds\s+\S+\s+\S+\s+50\s*\n/);
  assert.match(table.stdout, /\n4\s+succeeded\s+0\s+\d+\.\ds\s+\S+\s+\S+\s+SignalsScore\s+100\s*\n/);
  const wide = await runCli(['get', 'saturated', dir, '--episodes', '-o', 'wide']);
  assert.match(wide.stdout, /SCORE\s+SIGNALS\s+TOKENS/);
  assert.match(wide.stdout, /100\s+testOnly\+100/);
});

test('leash: completion.signals adds a complete checklist and completion keywords in the final answer', async () => {
  const plan = '# Plan\n- [x] one\n- [S] two\n';
  const dir = specDir([
    {
      name: 'scored',
      spec: {
        ...fast,
        progress: { checklist: 'PLAN.md' },
        completion: { signals: { threshold: 60 } },
        limits: { maxEpisodes: 5, episodeTimeoutSeconds: 30 },
      },
      script: {
        episodes: {
          '1': {
            mode: 'continue',
            text: 'The task is complete.',
            writeFiles: { 'PLAN.md': '# Plan\n- [x] one\n- [ ] two\n' },
          }, // 10
          '2': {
            mode: 'continue',
            text: 'All tasks are complete; nothing left to do.',
            writeFiles: { 'PLAN.md': plan },
          }, // 40 + 20
        },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'scored')?.status;
  assert.equal(s?.reason, 'SignalsScore');
  assert.equal(s?.episodes, 2);
  assert.equal(s?.lastEpisode?.completionScore, 60);
  assert.deepEqual(s?.lastEpisode?.completionSignals, ['checklist+40', 'keywords+20']);
});
