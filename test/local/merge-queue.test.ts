// spec.integrate end to end with real git and the real controller (`episodic run`): six branches through one
// queue with a conflict resolved by a resolution episode, a queue gate failing after a rebase, and kill -9
// during a rebase and during the push, each finishing after a restart with nothing lost or applied twice.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { readRecords } from '../../controller/sinks/local/episode-records.ts';
import { episodesPath } from '../../controller/util/state-layout.ts';
import { isAlive, NODE, readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import {
  assertLinear,
  assertNoLeftovers,
  assertOnceOnMain,
  git,
  lineEdit,
  origin,
  task,
} from '../support/merge-queue.ts';
import { waitFor } from '../support/wait.ts';

/** The task's one resolution episode is its episode 2: counted, recorded, its log in the task's logs. */
function assertResolutionEpisode(dir: string, name: string, prompt: RegExp[]) {
  const st = readStatus(dir, name)?.status;
  assert.equal(st?.episodes, 2, 'its own episode and the resolution episode');
  assert.equal(st?.lastEpisode?.number, 1, "lastEpisode stays the task's own");
  const logs = join(dir, '.episodic/logs/default', name);
  const records = readFileSync(join(logs, 'episodes.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome, r.reason]),
    [
      [1, 'succeeded', 'ExitedZero'],
      [2, 'succeeded', 'MergeQueueResolution'],
    ],
  );
  const log = readFileSync(join(logs, 'episode-2.log'), 'utf8');
  for (const re of prompt) assert.match(log, re);
  assert.equal(existsSync(join(dir, '.episodic/merge-queue/q/episodes')), false, 'no side log');
}

test('merge queue: six branches, two editing the same line, all integrated with one resolution episode, linear', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  const tasks = [1, 2, 3, 4].map((i) => task(`t${i}`, lineEdit(i * 10, `edit by t${i}`)));
  tasks.push(task('t5', lineEdit(50, 'edit by t5')), task('t6', lineEdit(50, 'edit by t6')));
  specDir(tasks, { dir });
  const res = await runCli(['run', dir], { timeoutMs: 120_000 });
  assert.equal(res.code, 0, res.stderr);
  const main = git(bare, 'show', 'main:shared.txt');
  for (let i = 1; i <= 6; i++) {
    assert.equal(main.split('\n').filter((l) => l === `edit by t${i}`).length, 1, `t${i}'s change once on main`);
    const st = readStatus(dir, `t${i}`)?.status;
    assert.equal(st?.integrate?.result, 'integrated', `t${i}: ${JSON.stringify(st?.integrate)}`);
    assert.equal(st?.phase, 'Succeeded');
  }
  assert.doesNotMatch(main, /<<<<<<<|>>>>>>>|=======/);
  const episodes = [1, 2, 3, 4, 5, 6].map((i) => readStatus(dir, `t${i}`)?.status.integrate?.episodes ?? 0);
  assert.equal(
    episodes.reduce((a, b) => a + b, 0),
    1,
    `one resolution episode: ${episodes}`,
  );
  assertResolutionEpisode(dir, `t${episodes.indexOf(1) + 1}`, [/These files conflict: shared\.txt/, /^<{7} /m]);
  assertLinear(bare, 7);
  assertNoLeftovers(dir);
});

test('merge queue: a gate failing after a clean rebase starts a resolution episode that fixes it', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  // Passes with a.txt or b.txt alone; both need both.txt, which only a resolution episode writes.
  const gate = {
    name: 'pair',
    check: [NODE, '-e', "const f=require('fs').existsSync;process.exit(f('a.txt')&&f('b.txt')&&!f('both.txt')?1:0)"],
  };
  const env = (file: string) => ({ MERGE_AGENT_NEW_FILE: file, MERGE_AGENT_ON_GATE: 'both.txt' });
  specDir([task('ta', env('a.txt'), { gates: [gate] }), task('tb', env('b.txt'), { gates: [gate] })], { dir });
  const metricsFile = join(dir, 'episodic.prom');
  const res = await runCli(['run', dir, '--metrics-file', metricsFile], { timeoutMs: 120_000 });
  assert.equal(res.code, 0, res.stderr);
  // The queue's metrics as a scrape has them (the registry's text, written at exit).
  const metrics = readFileSync(metricsFile, 'utf8');
  assert.match(metrics, /^episodic_merge_queue_integrations_total\{queue="q",result="integrated"\} 2$/m);
  assert.match(metrics, /^episodic_merge_queue_resolution_episodes_total\{queue="q",why="gate"\} 1$/m);
  assert.match(metrics, /^episodic_merge_queue_rebases_total\{queue="q",outcome="clean"\} 2$/m);
  assert.match(metrics, /^episodic_merge_queue_waiting\{queue="q"\} 0$/m);
  assert.match(metrics, /^episodic_merge_queue_integration_seconds_count\{queue="q"\} 2$/m);
  const files = git(bare, 'ls-tree', '--name-only', 'main').split('\n');
  assert.deepEqual(files.sort(), ['a.txt', 'b.txt', 'both.txt', 'shared.txt']);
  const [a, b] = ['ta', 'tb'].map((n) => readStatus(dir, n)?.status.integrate);
  assert.equal(a?.result, 'integrated');
  assert.equal(b?.result, 'integrated');
  assert.equal((a?.episodes ?? 0) + (b?.episodes ?? 0), 1, 'the second one needed one resolution episode');
  const resolved = a?.episodes === 1 ? 'ta' : 'tb';
  assertResolutionEpisode(dir, resolved, [/The queue gate "pair" failed after the rebase/]);
  assertLinear(bare, 4); // seed, a, b, the resolution's commit
  assertNoLeftovers(dir);
});

test('merge queue: a conflict left unresolved after onConflict.episodes is NeedsReview naming the file', async () => {
  const dir = tempDir();
  origin(dir);
  const none = { onConflict: { episodes: 0 } };
  specDir([task('u1', lineEdit(5, 'one'), none), task('u2', lineEdit(5, 'two'), none)], { dir });
  const res = await runCli(['run', dir], { timeoutMs: 120_000 });
  assert.equal(res.code, 1, 'a task needs review');
  const st = ['u1', 'u2'].map((n) => readStatus(dir, n)?.status);
  assert.deepEqual(st.map((s) => s?.integrate?.result).sort(), ['integrated', 'needsReview']);
  const review = st.find((s) => s?.integrate?.result === 'needsReview');
  assert.equal(review?.phase, 'NeedsReview');
  assert.match(review?.message ?? '', /conflicts in shared\.txt/);
  assert.deepEqual(review?.integrate?.conflicts, ['shared.txt']);
  // `episodic get NAME` tells where each stands in the queue.
  for (const [n, s] of ['u1', 'u2'].map((n, i) => [n, st[i]] as const)) {
    const got = await runCli(['get', n, dir]);
    assert.equal(got.code, 0, got.stderr);
    const want =
      s === review
        ? /\nMerge queue q: needsReview; \d+ rebases?, 0 resolution episodes\n {2}conflicts: shared\.txt\n/
        : new RegExp(
            `\\nMerge queue q: integrated at ${s?.integrate?.commit?.slice(0, 12)}; 1 rebase, 0 resolution episodes\\n`,
          );
    assert.match(got.stdout, want, n);
  }
  assertNoLeftovers(dir);
});

async function killedAndRestarted(dir: string, marker: string, after: () => void) {
  const run = startCli(['run', dir]);
  await waitFor('the pause', () => existsSync(marker) && readFileSync(marker, 'utf8') !== '', 90_000);
  run.child.kill('SIGKILL');
  await run.exited;
  after();
  const res = await runCli(['run', dir], { timeoutMs: 120_000 });
  assert.equal(res.code, 0, res.stderr);
}

function readFileText(file: string): string {
  return readFileSync(file, 'utf8');
}

test('merge queue: kill -9 during a rebase (stopped at a conflict, its episode running) → finished once after a restart', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  const block = join(dir, 'block');
  writeFileSync(block, '');
  const env = (i: number) => ({ ...lineEdit(7, `k${i}`), MERGE_AGENT_BLOCK: block });
  specDir([task('k1', env(1)), task('k2', env(2))], { dir });
  // The killed controller's resolution episode is left running: the restart kills it (its marker).
  await killedAndRestarted(dir, block, () => undefined);
  assert.equal(isAlive(Number(readFileText(block))), false, 'the orphaned resolution episode was killed');
  const resolved = ['k1', 'k2'].find((t) => readStatus(dir, t)?.status.integrate?.episodes === 1) ?? 'none';
  assertResolutionEpisode(dir, resolved, [/These files conflict: shared\.txt/]);
  const main = git(bare, 'show', 'main:shared.txt').split('\n');
  for (const t of ['k1', 'k2']) assert.equal(main.filter((l) => l === t).length, 1, `${t} once`);
  assertLinear(bare, 3);
  assertNoLeftovers(dir);
});

/**
 * The queue's clone made ahead, its remote's receive-pack or upload-pack a wrapper: `body` runs in it (with
 * MARK, the file it writes when the controller should be killed, and GO, the file the test writes afterwards).
 * After the kill the wrapper is dropped, so the restarted controller talks to the remote as usual.
 */
async function killedInTransport(
  dir: string,
  tasks: ReturnType<typeof task>[],
  side: 'receivepack' | 'uploadpack',
  body: string,
) {
  const bare = join(dir, 'origin.git');
  const mark = join(dir, 'mark');
  const wrapper = join(dir, `slow-${side}`);
  writeFileSync(wrapper, `#!/bin/sh\nMARK=${mark}\nGO=${mark}.go\n${body}\n`);
  chmodSync(wrapper, 0o755);
  const clone = join(dir, '.episodic/merge-queue/q/clone');
  mkdirSync(join(dir, '.episodic/merge-queue/q'), { recursive: true });
  git(dir, 'clone', '--quiet', bare, clone);
  git(clone, 'config', `remote.origin.${side}`, wrapper);
  specDir(tasks, { dir });
  await killedAndRestarted(dir, mark, () => {
    git(clone, 'config', '--unset', `remote.origin.${side}`);
    writeFileSync(`${mark}.go`, '');
  });
}

test('merge queue: kill -9 after the push landed, before the controller heard → integrated, not pushed twice', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  // Lands the push, then holds the connection until the controller is gone.
  const body = 'git-receive-pack "$@"\necho landed > $MARK\nwhile [ ! -f $GO ]; do sleep 0.05; done';
  await killedInTransport(dir, [task('p1', lineEdit(3, 'p1'))], 'receivepack', body);
  assertOnceOnMain(bare, ['p1']);
  assert.equal(readStatus(dir, 'p1')?.status.integrate?.result, 'integrated');
  assertLinear(bare, 2);
  assertNoLeftovers(dir);
});

test('merge queue: kill -9 during the push, before it landed → pushed after the restart, once', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  // Holds the push until the controller is gone, then drops it: this push never lands.
  const body = 'echo pushing > $MARK\nwhile [ ! -f $GO ]; do sleep 0.05; done\nexit 1';
  await killedInTransport(dir, [task('n1', lineEdit(3, 'n1')), task('n2', lineEdit(9, 'n2'))], 'receivepack', body);
  assertOnceOnMain(bare, ['n1', 'n2']);
  for (const t of ['n1', 'n2']) assert.equal(readStatus(dir, t)?.status.integrate?.result, 'integrated', t);
  assertLinear(bare, 3);
  assertNoLeftovers(dir);
});

test("merge queue: kill -9 during the rebase's fetch → rebased and pushed after the restart, once", async () => {
  const dir = tempDir();
  const bare = origin(dir);
  // The clone's own clone is done; the queue's first fetch (into and the waiting branches) hangs, then fails.
  const body = 'echo fetching > $MARK\nwhile [ ! -f $GO ]; do sleep 0.05; done\nexit 1';
  await killedInTransport(dir, [task('f1', lineEdit(4, 'f1')), task('f2', lineEdit(8, 'f2'))], 'uploadpack', body);
  assertOnceOnMain(bare, ['f1', 'f2']);
  for (const t of ['f1', 'f2']) assert.equal(readStatus(dir, t)?.status.integrate?.result, 'integrated', t);
  assertLinear(bare, 3);
  assertNoLeftovers(dir);
});

test('merge queue: a resolution episode takes a slot of --max-concurrent (never two agents at once under 1)', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  // `late` starts when k2 succeeds, so it works while the queue meets the conflict of k1 and k2.
  const late = task('late', { ...lineEdit(40, 'late'), MERGE_AGENT_DELAY_MS: '3000' });
  const tasks = [task('k1', lineEdit(20, 'k1')), task('k2', lineEdit(20, 'k2')), late];
  (tasks[2].spec as Record<string, unknown>).dependsOn = ['k2'];
  specDir(tasks, { dir });
  const res = await runCli(['run', dir, '--max-concurrent', '1'], { timeoutMs: 120_000 });
  assert.equal(res.code, 0, res.stderr);
  const spans: Array<{ what: string; start: number; end: number }> = [];
  for (const name of ['k1', 'k2', 'late']) {
    for (const r of await readRecords(episodesPath(join(dir, '.episodic'), 'default', name)))
      spans.push({
        what: `${name}#${r.number}`,
        start: Date.parse(r.startedAt ?? ''),
        end: Date.parse(r.finishedAt ?? ''),
      });
  }
  assert.equal(spans.length, 4, `three episodes and one resolution episode: ${JSON.stringify(spans)}`);
  const overlapping = spans.filter((s) => spans.some((o) => o !== s && o.start < s.end && s.start < o.end));
  assert.deepEqual(overlapping, [], 'no two agents ran at once');
  assertOnceOnMain(bare, ['k1', 'k2', 'late']);
  assertLinear(bare, 4);
});
