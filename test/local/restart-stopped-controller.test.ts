// Kill -9 at the worst moment (issue 18, item 5): the agent prints its result and exits while the controller
// is stopped (SIGSTOP), then the controller is killed. Its result never passed through the controller; a
// restart must still find it, record the real outcome and cost, and not redo the episode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');

test('SIGSTOP the controller, the agent prints its result and exits, SIGKILL, restart: its real outcome and cost, not redone', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  const go = join(dir, 'go');
  specDir([{ name: 'stopped', script: { default: { mode: 'success', costUSD: 0.42, waitForFile: go }, record } }], {
    dir,
  });
  const logDir = join(dir, '.episodic/logs/default/stopped');
  const log = join(logDir, 'episode-1.log');
  const first = startCli(['run', dir]);
  const agentPid = await waitFor('the agent started', () => {
    const line = read(record).split('\n')[0];
    return line ? (JSON.parse(line) as { pid: number }).pid : undefined;
  });
  await waitFor('its init event in the log', () => read(log).includes('"subtype":"init"'));

  first.child.kill('SIGSTOP');
  writeFileSync(go, '');
  // The agent prints its result and exits while nothing reads its output (a zombie: its parent is stopped).
  await waitFor('the agent to exit', () => !isAlive(agentPid));
  first.child.kill('SIGKILL');
  await first.exited;
  assert.doesNotMatch(read(log), /"type":"result"/, 'the stopped controller never logged the result itself');
  assert.equal(readStatus(dir, 'stopped')?.status.currentEpisode?.number, 1, 'on record as running');

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /its end is read from its log/);
  const s = readStatus(dir, 'stopped')?.status;
  assert.equal(s?.phase, 'Succeeded', JSON.stringify(s));
  assert.equal(s?.episodes, 1, 'the finished episode is not redone');
  assert.equal(s?.costUSD, 0.42);
  assert.equal(s?.lastEpisode?.outcome, 'succeeded');
  assert.equal(read(record).trim().split('\n').length, 1, 'the agent ran once');
  const records = read(join(logDir, 'episodes.jsonl'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { number: number; outcome: string; costUSD: number });
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome, r.costUSD]),
    [[1, 'succeeded', 0.42]],
  );
  // The log now shows the result it was recorded from, and no spool of the agent's output is left behind.
  assert.match(read(log), /"type":"result".*"total_cost_usd":0.42/);
  assert.deepEqual(
    readdirSync(logDir).filter((f) => f.startsWith('episode-')),
    ['episode-1.log'],
  );
});
