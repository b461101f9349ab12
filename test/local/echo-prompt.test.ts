// Issue 18 item 1, end to end through `episodic run`: an agent whose answer starts with a copy of its prompt
// (after "Prompt was: ", quoted, or only the sentence that names the sentinel) never completes, in plain text
// and in JSON; the same echo followed by the agent's own claim does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAKE_CLAUDE, NODE, readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const PROMPT = 'Fix the failing test.\nWhen it passes, print <promise>DONE</promise> and nothing else.';

test('an agent that echoes its prompt with a prefix, quoted or in part never completes; its own claim after it does', async () => {
  const task = (name: string, mode: string, format: string, output: string, then = 'continue') => ({
    name,
    spec: {
      backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
      prompt: PROMPT,
      agent: { command: [NODE, FAKE_CLAUDE, '-p', '--output-format', format], output },
      completion: { promise: 'DONE' },
      limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 },
    },
    script: { default: { mode, then, promise: 'DONE' } },
  });
  const echoing = [
    task('prefixed-text', 'echo-prompt-prefixed', 'text', 'text'),
    task('prefixed-auto', 'echo-prompt-prefixed', 'text', 'auto'),
    task('prefixed-claude', 'echo-prompt-prefixed', 'text', 'claude'),
    task('prefixed-json', 'echo-prompt-prefixed', 'json', 'auto'),
    task('quoted-text', 'echo-prompt-quoted', 'text', 'text'),
    task('sentence-text', 'echo-prompt-sentence', 'text', 'text'),
  ];
  const dir = specDir([...echoing, task('prefixed-then-done', 'echo-prompt-prefixed', 'text', 'text', 'success')]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1, res.stderr);
  for (const { name } of echoing) {
    const s = readStatus(dir, name)?.status;
    assert.notEqual(s?.phase, 'Succeeded', name);
    assert.equal(s?.reason, 'MaxEpisodesReached', name);
    assert.equal(s?.episodes, 2, name);
    assert.equal(s?.lastEpisode?.outcome, 'continue', name);
    assert.match(s?.lastEpisode?.message ?? '', /Working on it, not finished yet\.$/, name);
  }
  const done = readStatus(dir, 'prefixed-then-done')?.status;
  assert.equal(done?.phase, 'Succeeded');
  assert.equal(done?.reason, 'PromiseDetected');
  assert.equal(done?.episodes, 1);
});

test('kill -9 after an echoing agent printed its result: the log read back on restart is no claim either', async () => {
  const dir = tempDir();
  const echo = { mode: 'echo-prompt-prefixed', promise: 'DONE' };
  specDir(
    [
      {
        name: 'echo',
        spec: {
          backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
          prompt: PROMPT,
          agent: { command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'], output: 'auto' },
          completion: { promise: 'DONE' },
          limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 },
        },
        // The first run prints its result and lingers: the controller dies in between.
        script: { episodes: { '1': { ...echo, lingerSeconds: 300 } }, default: echo },
      },
    ],
    { dir },
  );
  const log = join(dir, '.episodic/logs/default/echo/episode-1.log');
  const first = startCli(['run', dir]);
  await waitFor(
    'the result in the log',
    () => existsSync(log) && readFileSync(log, 'utf8').includes('"type":"result"'),
  );
  first.child.kill('SIGKILL');
  await first.exited;
  const second = await runCli(['run', dir]);
  assert.match(second.stderr, /episode ended while no controller ran; its end is read from its log/);
  const s = readStatus(dir, 'echo')?.status;
  assert.equal(s?.reason, 'MaxEpisodesReached', s?.lastEpisode?.message);
  assert.equal(s?.episodes, 2);
  const first1 = readFileSync(join(dir, '.episodic/logs/default/echo/episodes.jsonl'), 'utf8').split('\n')[0] ?? '';
  assert.equal((JSON.parse(first1) as { outcome: string }).outcome, 'continue');
});
