// Spend across kill -9: an episode that ended while no controller was alive is read back from its log on
// restart: its real outcome and cost, never "interrupted, $0" for finished work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { git } from '../support/git.ts';

const logOf = (dir: string, name: string, n: number) => join(dir, `.episodic/logs/default/${name}/episode-${n}.log`);
const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');

interface Run {
  env: Record<string, string>;
  pid: number;
}
const runsIn = (file: string): Run[] =>
  read(file)
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Run);

test('kill -9 after the agent printed its result: the restart records the real outcome and cost, and does not redo it', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  // The agent prints its result and then lingers (a CLI tidying up): the controller dies in between.
  specDir([{ name: 'done', script: { default: { mode: 'success', costUSD: 0.7, lingerSeconds: 300 }, record } }], {
    dir,
  });
  const first = startCli(['run', dir]);
  await waitFor('the result in the log', () => read(logOf(dir, 'done', 1)).includes('"type":"result"'));
  first.child.kill('SIGKILL');
  await first.exited;
  assert.equal(
    readStatus(dir, 'done')?.status.currentEpisode?.number,
    1,
    'on record as running when the controller died',
  );

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /episode ended while no controller ran; its end is read from its log/);
  const s = readStatus(dir, 'done')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.reason, 'PromiseDetected');
  assert.equal(s?.episodes, 1, 'the finished episode is not redone');
  assert.equal(s?.costUSD, 0.7);
  assert.equal(s?.lastEpisode?.outcome, 'succeeded');
  assert.equal(s?.lastEpisode?.exitCode, 0, 'the exit code a successful result gets');
  assert.deepEqual(
    runsIn(record).map((r) => r.env.EPISODIC_EPISODE),
    ['1'],
    'the agent ran once',
  );
  const records = read(join(dir, '.episodic/logs/default/done/episodes.jsonl'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome, r.costUSD]),
    [[1, 'succeeded', 0.7]],
  );
});

test('kill -9 before the agent finished: interrupted (its log has no result), retried as the next episode', async () => {
  const dir = tempDir();
  // Tokens priced by the spec: the log's assistant messages show spend before any result.
  const pricing = { inputPerMTok: 1000, outputPerMTok: 1000 };
  specDir(
    [
      {
        name: 'cut',
        spec: {
          agent: {
            command: [process.execPath, join(import.meta.dirname, '../agents/fake-claude.mjs')],
            output: 'claude',
            pricing,
          },
        },
        script: {
          episodes: {
            '1': {
              mode: 'sleep',
              children: false,
              sleepSeconds: 300,
              usage: { input: 100, output: 100, cacheRead: 0 },
            },
          },
          default: { mode: 'success', costUSD: 0.25 },
        },
      },
    ],
    { dir },
  );
  const first = startCli(['run', dir]);
  await waitFor('the init event in the log', () => read(logOf(dir, 'cut', 1)).includes('"subtype":"init"'));
  first.child.kill('SIGKILL');
  await first.exited;
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  const s = readStatus(dir, 'cut')?.status;
  assert.equal(s?.episodes, 2, 'episode 1 interrupted, episode 2 succeeded');
  const records = read(join(dir, '.episodic/logs/default/cut/episodes.jsonl'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome]),
    [
      [1, 'interrupted'],
      [2, 'succeeded'],
    ],
  );
  assert.equal(s?.costUSD, 0.25, 'nothing was spent in episode 1 by its log (init only)');
});

type KillPoint = 'startup' | 'running' | 'result';
const KILL_POINTS: readonly KillPoint[] = ['startup', 'running', 'result', 'result'];
// Random delay after the event: during start-up/recovery, mid-work (the agent answers after 2 s), and
// after its result while it lingers (0.3 s) or once its end is recorded.
const KILL_DELAY_MS: Record<KillPoint, number> = { startup: 400, running: 300, result: 400 };

/** Whether this run reached the event a kill point waits for: its start-up, an episode running, a result. */
function killPointReached(dir: string, kind: KillPoint, output: string): boolean {
  if (kind === 'startup') return true;
  // An episode this run started (not one on record from a killed run): its EpisodeStarted log line.
  if (!output.includes('EpisodeStarted')) return false;
  if (kind === 'running') return true;
  const current = readStatus(dir, 'loop')?.status.currentEpisode?.number;
  return current !== undefined && read(logOf(dir, 'loop', current)).includes('"type":"result"');
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** mulberry32: the kill points are random but the same on every run of the test. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('ten kill -9s at random points: no episode lost or run twice, spend never below what the logs show', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  // Every kill after a start uses up an episode or two: enough are left for the last run to finish.
  const EPISODES = 14;
  const episodes: Record<string, unknown> = {};
  // The agent works 2 s before its result: its tree outlives a kill -9 of the controller, so a kill mid-work
  // stays an interrupted episode only if the restart kills the tree before it answers.
  for (let n = 1; n <= 30; n++)
    episodes[String(n)] = { mode: 'continue', costUSD: 0.01 * n, delayMs: 2000, lingerSeconds: 0.3 };
  specDir(
    [
      {
        name: 'loop',
        // The agent changes nothing: the breaker is off, this is about crash recovery.
        spec: { limits: { maxEpisodes: EPISODES, episodeTimeoutSeconds: 30 }, breaker: { noProgressEpisodes: 0 } },
        script: { episodes, record },
      },
    ],
    { dir },
  );
  const random = seeded(12);
  let recovered = 0;
  let crashed = false;
  const count = (text: string) => text.split('its end is read from its log').length - 1;
  for (let kill = 0; kill < 10; kill++) {
    const run = startCli(['run', dir]);
    let ended = false;
    void run.exited.then(() => (ended = true));
    // Kill points follow events, not wall time from start, so a slow machine still sees every kind.
    const kind = KILL_POINTS[Math.floor(random() * KILL_POINTS.length)] as KillPoint;
    await waitFor(`${kind} (kill ${kill + 1})`, () => ended || killPointReached(dir, kind, run.output()));
    await sleep(Math.floor(random() * KILL_DELAY_MS[kind]));
    run.child.kill('SIGKILL');
    await run.exited;
    // The first mid-work kill takes the agent too, as a machine crash would: an interrupted episode whatever
    // the machine's speed (a slow restart lets a surviving agent answer before its tree is killed).
    const current = readStatus(dir, 'loop')?.status.currentEpisode?.number;
    if (kind === 'running' && !crashed && current !== undefined) {
      crashed = true;
      const ofCurrent = () => existsSync(record) && runsIn(record).find((r) => r.env.EPISODIC_EPISODE === `${current}`);
      const agent = await waitFor(`episode ${current}'s agent started`, () => ofCurrent() || undefined);
      killQuietly(agent.pid);
    }
    recovered += count(run.output());
  }
  const last = await runCli(['run', dir]);
  recovered += count(last.stderr);
  assert.ok(recovered >= 1, `some kills came after an agent's result (${recovered})`);
  assert.equal(last.code, 1, 'ends NeedsReview at maxEpisodes');
  const s = readStatus(dir, 'loop')?.status;
  assert.equal(s?.reason, 'MaxEpisodesReached', JSON.stringify(s));

  const records = read(join(dir, '.episodic/logs/default/loop/episodes.jsonl'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const numbers = records.map((r) => r.number as number);
  assert.deepEqual(
    numbers,
    Array.from({ length: s?.episodes ?? 0 }, (_, i) => i + 1),
    'one record per episode, in order, none missing',
  );
  const ran = runsIn(record).map((r) => r.env.EPISODIC_EPISODE);
  assert.equal(new Set(ran).size, ran.length, `no episode number ran twice: ${ran.join(',')}`);

  // The spend every log shows: its result's total_cost_usd.
  let shown = 0;
  const logs = readdirSync(join(dir, '.episodic/logs/default/loop')).filter((f) => /^episode-\d+\.log$/.test(f));
  for (const f of logs) {
    const m = /"type":"result".*"total_cost_usd":([0-9.]+)/.exec(read(join(dir, '.episodic/logs/default/loop', f)));
    if (m) shown += Number(m[1]);
  }
  assert.ok(
    Math.abs((s?.costUSD ?? 0) - shown) < 1e-9,
    `status spend ${s?.costUSD} equals what the logs show ${shown}`,
  );
  const recordedCost = records.reduce((sum, r) => sum + (r.costUSD as number), 0);
  assert.ok(Math.abs(recordedCost - shown) < 1e-9, `records ${recordedCost} vs logs ${shown}`);
  for (const r of records) {
    const finished = read(logOf(dir, 'loop', r.number)).includes('"type":"result"');
    if (finished) assert.notEqual(r.outcome, 'interrupted', `episode ${r.number} finished in its log`);
  }
  assert.equal(records.length, EPISODES, 'every episode started counts against maxEpisodes, interrupted ones too');
  // This seed kills some episodes mid-work and some after their result: both paths are exercised.
  const outcomes = records.map((r) => r.outcome as string);
  assert.ok(outcomes.includes('interrupted') && outcomes.includes('continue'), outcomes.join(','));
});

test('kill -9 between the agent’s result and its checkpoint: the restart commits and pushes its work, with its evidence', async () => {
  const dir = tempDir();
  const bare = join(dir, 'origin.git');
  git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = join(dir, 'seed');
  git(dir, 'clone', '--quiet', bare, seed);
  // The agent writes its work, prints its result and lingers: the controller dies before the checkpoint.
  const work = { mode: 'success', writeFiles: { 'work.txt': 'one\ntwo\nthree' }, lingerSeconds: 300 };
  writeFileSync(join(seed, '.fake-agent.json'), JSON.stringify({ tasks: { t: work } }));
  git(seed, 'add', '.');
  git(seed, 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  const workspace = { git: { url: 'origin.git', ref: 'episodic/t', from: 'main' } };
  specDir([{ name: 't', spec: { workspace, limits: { maxEpisodes: 2 } } }], { dir });
  const first = startCli(['run', dir]);
  await waitFor('the result in the log', () => read(logOf(dir, 't', 1)).includes('"type":"result"'));
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  const s = readStatus(dir, 't')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 1, 'the finished episode is not redone');
  assert.equal(git(bare, 'show', 'episodic/t:work.txt'), 'one\ntwo\nthree', 'its work is committed and pushed');
  assert.equal(s?.changedLines, 3, 'its evidence counts the lines it wrote');
  const [record] = read(join(dir, '.episodic/logs/default/t/episodes.jsonl'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(record.evidence?.workspace?.commit, git(bare, 'rev-parse', 'episodic/t'));
});
