// A spec deleted while no controller runs: the next `episodic run` records the episode the killed controller
// left (interrupted, or its real end from its log), says the spec was deleted, keeps the task's logs and
// records under deleted/ and removes its status, as a deletion while running does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lastDeletedTaskDir } from '../../controller/sinks/local/episode-records.ts';
import { assertAllDead, readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');
const pidsIn = (file: string) => read(file).split(/\s+/).filter(Boolean).map(Number);
const recordsIn = (file: string) =>
  read(file)
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { number: number; outcome: string; costUSD: number; message?: string });

/** The task's logs and records, moved aside; asserts nothing of it is left where a new task of the name would log. */
function keptDir(dir: string, name: string): string {
  assert.ok(!existsSync(join(dir, `.episodic/logs/default/${name}`)), 'its logs moved away');
  const kept = lastDeletedTaskDir(join(dir, '.episodic'), 'default', name);
  assert.ok(kept, 'its logs and records are kept under deleted/');
  return kept;
}

async function assertListedAsDeleted(dir: string, name: string, kept: string): Promise<void> {
  const listed = await runCli(['get', dir]);
  assert.doesNotMatch(listed.stdout, new RegExp(`\\b${name}\\b`), 'get does not list it');
  const episodes = await runCli(['get', name, dir, '--episodes']);
  assert.equal(episodes.code, 1, 'no task on record');
  assert.match(
    episodes.stderr,
    new RegExp(`it was deleted, its episode records are kept in ${join(kept, 'episodes.jsonl')}`),
  );
}

test('kill -9 mid-episode, spec deleted, run again: the episode is recorded interrupted, saying so, and the task is let go', async () => {
  const dir = tempDir();
  const pidFile = join(dir, 'pids.txt');
  specDir([{ name: 'gone', script: { default: { mode: 'sleep', sleepSeconds: 300, pidFile } } }], { dir });
  const first = startCli(['run', dir]);
  await waitFor(
    'episode 1 running with its tree',
    () => readStatus(dir, 'gone')?.status.currentEpisode?.number === 1 && pidsIn(pidFile).length >= 2,
  );
  first.child.kill('SIGKILL');
  await first.exited;
  rmSync(join(dir, 'gone.yaml'));

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 1, 'no AgentTask left to run');
  assert.match(second.stderr, /no AgentTask found in/);
  await assertAllDead(pidsIn(pidFile), 'the orphaned tree');
  assert.equal(readStatus(dir, 'gone'), undefined, 'its status file is gone');
  const kept = keptDir(dir, 'gone');
  assert.deepEqual(
    recordsIn(join(kept, 'episodes.jsonl')).map((r) => [r.number, r.outcome]),
    [[1, 'interrupted']],
  );
  assert.match(recordsIn(join(kept, 'episodes.jsonl'))[0]?.message ?? '', /spec deleted/);
  assert.ok(existsSync(join(kept, 'episode-1.log')), 'its episode log is kept');
  await assertListedAsDeleted(dir, 'gone', kept);
});

test('the agent printed its result before the kill -9 and the spec went: its real end and cost are in the kept record', async () => {
  const dir = tempDir();
  // The agent prints its result and then lingers (a CLI tidying up): the controller dies in between.
  specDir(
    [
      { name: 'done', script: { default: { mode: 'success', costUSD: 0.7, lingerSeconds: 300 } } },
      { name: 'stays', script: { default: { mode: 'success', costUSD: 0.1 } } },
    ],
    { dir },
  );
  const first = startCli(['run', dir]);
  await waitFor('the result in the log', () =>
    read(join(dir, '.episodic/logs/default/done/episode-1.log')).includes('"type":"result"'),
  );
  first.child.kill('SIGKILL');
  await first.exited;
  rmSync(join(dir, 'done.yaml'));

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /episode ended while no controller ran; its end is read from its log/);
  assert.equal(readStatus(dir, 'done'), undefined, 'its status file is gone');
  assert.equal(readStatus(dir, 'stays')?.status.phase, 'Succeeded', 'the other task ran as usual');
  const kept = keptDir(dir, 'done');
  const records = recordsIn(join(kept, 'episodes.jsonl'));
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome, r.costUSD]),
    [[1, 'succeeded', 0.7]],
  );
  assert.match(records[0]?.message ?? '', /spec deleted/);
  await assertListedAsDeleted(dir, 'done', kept);

  // A finished task deleted while no controller ran goes the same way, with no episode to record.
  rmSync(join(dir, 'stays.yaml'));
  const third = await runCli(['run', dir]);
  assert.equal(third.code, 1, 'no AgentTask left to run');
  assert.equal(readStatus(dir, 'stays'), undefined, 'its status file is gone');
  const keptStays = keptDir(dir, 'stays');
  assert.deepEqual(
    recordsIn(join(keptStays, 'episodes.jsonl')).map((r) => [r.number, r.outcome, r.costUSD]),
    [[1, 'succeeded', 0.1]],
  );
});

test('a spec file that cannot be read might hold the task: its status stays, and nothing is moved', async () => {
  const dir = tempDir();
  specDir([{ name: 'typo', script: { default: { mode: 'success', costUSD: 0.2 } } }], { dir });
  assert.equal((await runCli(['run', dir])).code, 0);
  writeFileSync(join(dir, 'typo.yaml'), 'kind: AgentTask\nmetadata: {name: typo\n');
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 1);
  assert.match(second.stderr, /some spec document could not be read: their status is kept/);
  assert.equal(readStatus(dir, 'typo')?.status.phase, 'Succeeded', 'its status is kept');
  assert.ok(existsSync(join(dir, '.episodic/logs/default/typo/episodes.jsonl')), 'its records stay in place');
});
