// Crash safety and live changes: kill -9 and restart, specs edited/deleted/suspended mid-episode, SIGINT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lastDeletedTaskDir } from '../../controller/sinks/local/episode-records.ts';
import { hashSpec } from '../../controller/sources/local/spec-files.ts';
import { assertAllDead, isAlive, readStatus, runCli, specDir, startCli, taskYaml, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

function pidsIn(file: string): number[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number) : [];
}

test('kill -9 mid-episode, restart: orphan tree killed, episode recorded as interrupted, nothing lost', async () => {
  const dir = tempDir();
  const pidFile = join(dir, 'pids.txt');
  specDir(
    [
      {
        name: 'crashy',
        script: {
          steps: [
            { mode: 'continue', costUSD: 0.5 },
            { mode: 'sleep', sleepSeconds: 300, pidFile },
            { mode: 'success' },
          ],
        },
      },
    ],
    { dir },
  );
  const first = startCli(['run', dir]);
  await waitFor(
    'episode 2 running with its tree',
    () => readStatus(dir, 'crashy')?.status.currentEpisode?.number === 2 && pidsIn(pidFile).length >= 2,
  );
  first.child.kill('SIGKILL');
  await first.exited;
  const orphans = pidsIn(pidFile);
  assert.ok(orphans.some(isAlive), 'the agent tree outlives a kill -9 of its controller (own process group)');
  const before = readStatus(dir, 'crashy');
  assert.equal(before?.status.costUSD, 0.5, 'cost of episode 1 was recorded before the crash');
  // What the restart goes by: the episode on record names the marker every process of it carries
  // (the state directory's id, the task, the episode number).
  const stateId = readFileSync(join(dir, '.episodic/id'), 'utf8').trim();
  assert.match(stateId, /^[0-9a-f-]{36}$/);
  const marker = `${stateId}/default/crashy/${before?.status.currentEpisode?.number}`;
  for (const pid of orphans.filter(isAlive)) {
    assert.ok(
      readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`EPISODIC_PROCESS_TREE=${marker}`),
      `pid ${pid} carries the marker`,
    );
  }

  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  await assertAllDead(orphans, 'orphans after restart');
  const s = readStatus(dir, 'crashy')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 3, 'episodes 1 (continue), 2 (interrupted), 3 (success): no number reused');
  assert.equal(s?.consecutiveFailures, 0, 'interrupted is not a failure');
  assert.ok(Math.abs((s?.costUSD ?? 0) - 0.5 - 0.0123) < 1e-9, `cost intact: ${s?.costUSD}`);
  assert.match(readFileSync(join(dir, '.episodic/logs/default/crashy/episode-2.log'), 'utf8'), /"type":"system"/);
});

test('a crash after an episode is on record but before its agent started: recorded as interrupted, counters intact', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  specDir([{ name: 'unspawned', script: { default: { mode: 'success' }, record } }], { dir });
  const spec = JSON.parse(readFileSync(join(dir, 'unspawned.yaml'), 'utf8')).spec;
  // What start() writes before it spawns: episode 2 runs, its processes carry this marker. Episode 1 continued
  // and cost $0.50. No process carries the marker: the controller died before the spawn.
  const marker = randomUUID();
  const status = {
    phase: 'Running',
    reason: 'EpisodeRunning',
    episodes: 2,
    costUSD: 0.5,
    currentEpisode: { number: 2, startedAt: new Date(Date.now() - 60_000).toISOString() },
    lastEpisode: { number: 1, outcome: 'continue', exitCode: 0, costUSD: 0.5 },
    observedGeneration: 1,
  };
  mkdirSync(join(dir, '.episodic/status/default'), { recursive: true });
  const stored = {
    namespace: 'default',
    name: 'unspawned',
    generation: 1,
    specHash: hashSpec(spec),
    status,
    processMarker: marker,
  };
  writeFileSync(join(dir, '.episodic/status/default/unspawned.json'), JSON.stringify(stored));

  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const logLines = res.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const restart = logLines.find((l) => l.msg === 'episode interrupted by a controller restart');
  assert.deepEqual(
    [restart?.episode, restart?.orphanKilled],
    [2, false],
    'nothing carried the marker, and the episode still ended',
  );
  assert.ok(
    logLines.some((l) => l.event === 'EpisodeInterrupted' && l.episode === 2),
    res.stderr,
  );
  const s = readStatus(dir, 'unspawned')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 3, 'episode 2 keeps its number; episode 3 succeeds');
  assert.equal(s?.consecutiveFailures, 0, 'interrupted is not a failure');
  assert.ok(Math.abs((s?.costUSD ?? 0) - 0.5 - 0.0123) < 1e-9, `cost intact: ${s?.costUSD}`);
  const runs = readFileSync(record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { env: Record<string, string> });
  assert.deepEqual(
    runs.map((r) => r.env.EPISODIC_EPISODE),
    ['3'],
    'the agent ran once, for episode 3',
  );
  assert.notEqual(runs[0].env.EPISODIC_PROCESS_TREE, marker, 'a new episode, a new marker');
});

test('two controllers cannot share a state directory', async () => {
  const dir = specDir([{ name: 'solo', script: { default: { mode: 'sleep', sleepSeconds: 30 } } }]);
  const first = startCli(['run', dir]);
  await waitFor('episode running', () => readStatus(dir, 'solo')?.status.currentEpisode?.number === 1);
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 1);
  assert.match(second.stderr, /in use by another episodic controller/);
  first.child.kill('SIGINT');
  assert.equal(await first.exited, 130);
});

test('SIGINT: stop starting, terminate running trees, persist, exit 130; a rerun carries on', async () => {
  const dir = tempDir();
  const pidFile = join(dir, 'pids.txt');
  specDir(
    [{ name: 'interrupted', script: { steps: [{ mode: 'sleep', sleepSeconds: 300, pidFile }, { mode: 'success' }] } }],
    { dir },
  );
  const run = startCli(['run', dir]);
  await waitFor('tree started', () => pidsIn(pidFile).length >= 2);
  run.child.kill('SIGINT');
  assert.equal(await run.exited, 130);
  await assertAllDead(pidsIn(pidFile), 'tree after SIGINT');
  const s = readStatus(dir, 'interrupted')?.status;
  assert.equal(s?.lastEpisode?.outcome, 'cancelled');
  assert.equal(s?.currentEpisode, undefined);
  const again = await runCli(['run', dir]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(readStatus(dir, 'interrupted')?.status.phase, 'Succeeded');
});

test('--watch: an edit mid-episode lets it finish; the next episode runs the new spec', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  const script = {
    steps: [{ mode: 'sleep', sleepSeconds: 2, then: 'continue', children: false }, { mode: 'success' }],
    record,
  };
  specDir([{ name: 'edited', script }], { dir });
  const run = startCli(['run', dir, '--watch']);
  await waitFor('episode 1 running', () => readStatus(dir, 'edited')?.status.currentEpisode?.number === 1);
  writeFileSync(
    join(dir, 'edited.yaml'),
    taskYaml({ name: 'edited', spec: { prompt: 'NEW PROMPT for episode {{episode}}' } }),
  );
  await waitFor('task succeeded', () => readStatus(dir, 'edited')?.status.phase === 'Succeeded', 30_000);
  const runs = readFileSync(record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { stdin: string });
  assert.equal(runs.length, 2);
  assert.doesNotMatch(runs[0].stdin, /NEW PROMPT/);
  assert.match(runs[1].stdin, /NEW PROMPT for episode 2/);
  const stored = readStatus(dir, 'edited');
  assert.equal(stored?.generation, 2);
  assert.equal(stored?.status.observedGeneration, 2);
  assert.equal(stored?.status.lastEpisode?.number, 2, 'episode 1 was not cancelled by the edit');

  // Editing a finished task re-opens it; counters that enforce caps stay cumulative.
  writeFileSync(join(dir, 'edited.yaml'), taskYaml({ name: 'edited', spec: { prompt: 'again {{episode}}' } }));
  await waitFor('re-opened and done again', () => {
    const s = readStatus(dir, 'edited');
    return s?.generation === 3 && s.status.phase === 'Succeeded' && s.status.episodes === 3;
  });
  run.child.kill('SIGINT');
  assert.equal(await run.exited, 130);
});

test('--watch: deleting a spec mid-episode cancels it, saying so, and lets the task go; suspend stops it and keeps it', async () => {
  const dir = tempDir();
  const goneFile = join(dir, 'gone-pids.txt');
  const pausedFile = join(dir, 'paused-pids.txt');
  specDir(
    [
      { name: 'gone', script: { default: { mode: 'sleep', sleepSeconds: 300, pidFile: goneFile } } },
      { name: 'paused', script: { default: { mode: 'sleep', sleepSeconds: 300, pidFile: pausedFile } } },
    ],
    { dir },
  );
  const run = startCli(['run', dir, '--watch']);
  await waitFor('both running', () => pidsIn(goneFile).length >= 2 && pidsIn(pausedFile).length >= 2);
  rmSync(join(dir, 'gone.yaml'));
  writeFileSync(join(dir, 'paused.yaml'), taskYaml({ name: 'paused', spec: { suspend: true } }));
  // The deleted task goes as an AgentTask does on a cluster: its status with it; its logs and records are kept aside.
  await waitFor('deleted task let go', () => !existsSync(join(dir, '.episodic/status/default/gone.json')));
  await waitFor(
    'suspended',
    () =>
      readStatus(dir, 'paused')?.status.phase === 'Suspended' &&
      readStatus(dir, 'paused')?.status.lastEpisode?.outcome === 'cancelled',
  );
  await assertAllDead([...pidsIn(goneFile), ...pidsIn(pausedFile)], 'cancelled trees');
  assert.ok(
    !existsSync(join(dir, '.episodic/logs/default/gone')),
    'nothing of it is left where a new "gone" would log',
  );
  const kept = lastDeletedTaskDir(join(dir, '.episodic'), 'default', 'gone');
  assert.ok(kept, 'its logs and records are kept');
  const records = readFileSync(join(kept, 'episodes.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    records.map((r) => [r.number, r.outcome, r.message]),
    [[1, 'cancelled', 'episode cancelled: spec deleted']],
  );
  assert.match(
    readFileSync(join(kept, 'episode-1.log'), 'utf8'),
    /^--- episodic: cancelled \(spec deleted\); process tree killed ---$/m,
  );
  const listed = await runCli(['get', dir]);
  assert.match(listed.stdout, /paused/);
  assert.doesNotMatch(listed.stdout, /gone/);
  const episodes = await runCli(['get', 'gone', dir, '--episodes']);
  assert.equal(episodes.code, 1, 'no task on record');
  assert.equal(
    episodes.stderr.trim(),
    `episodic get: no task default/gone on record in ${join(dir, '.episodic')}; it was deleted, its episode records are kept in ${join(kept, 'episodes.jsonl')}`,
  );
  assert.equal(readStatus(dir, 'paused')?.status.episodes, 1, 'the status of a suspended task is kept');
  run.child.kill('SIGINT');
  assert.equal(await run.exited, 130);
});

test('many instant episodes in a row never lose a result (an episode may end before its pid is persisted)', async () => {
  const dir = tempDir();
  const agent = join(dir, 'instant.sh');
  writeFileSync(
    agent,
    '#!/bin/sh\ncat >/dev/null\necho "{\\"type\\":\\"result\\",\\"is_error\\":false,\\"result\\":\\"step\\",\\"total_cost_usd\\":0}"\n',
    { mode: 0o755 },
  );
  // The agent changes nothing: the breaker is off, this is about the loop never losing a result.
  specDir(
    [
      {
        name: 'rapid',
        spec: {
          agent: { command: [agent], output: 'claude' },
          limits: { maxEpisodes: 40, episodeTimeoutSeconds: 30 },
          breaker: { noProgressEpisodes: 0 },
        },
      },
    ],
    { dir },
  );
  const res = await runCli(['run', dir], { timeoutMs: 60_000 });
  assert.equal(res.signal, null, 'the run finished on its own');
  const s = readStatus(dir, 'rapid')?.status;
  assert.equal(s?.reason, 'MaxEpisodesReached');
  assert.equal(s?.episodes, 40);
  assert.equal(s?.lastEpisode?.number, 40);
});

// The agent's check runs milliseconds after its exec, so this catches an agent started before the status write,
// not one that beats the write by less than that; the order itself is reconcileTask() in core/controller.ts.
test('an agent starts only once its episode and process marker are on record (a crash in between leaves nothing unrecorded)', async () => {
  const dir = tempDir();
  const agent = join(dir, 'check.sh');
  // On record: the status file names this episode as the current one, and the marker this process carries
  // is the one a restart derives from that record.
  writeFileSync(
    agent,
    '#!/bin/sh\necho "stderr of $EPISODIC_EPISODE" >&2\nif [ "$EPISODIC_PROCESS_TREE" = "$(cat "$STATE_ID")/default/checked/$EPISODIC_EPISODE" ] && tr -d " \\n" < "$STATUS_FILE" | grep -q "\\"currentEpisode\\":{\\"number\\":$EPISODIC_EPISODE,"; then echo "episode $EPISODIC_EPISODE on record"; exit 0; fi\necho "not on record"; exit 1\n',
    { mode: 0o755 },
  );
  const statusFile = join(dir, '.episodic/status/default/checked.json');
  specDir(
    [
      {
        name: 'checked',
        spec: {
          agent: {
            command: [agent],
            output: 'text',
            env: [
              { name: 'STATUS_FILE', value: statusFile },
              { name: 'STATE_ID', value: join(dir, '.episodic/id') },
            ],
          },
          limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 },
        },
      },
    ],
    { dir },
  );
  const res = await runCli(['run', dir], { timeoutMs: 60_000 });
  assert.equal(res.code, 1, 'three episodes that only continue end in NeedsReview');
  const s = readStatus(dir, 'checked')?.status;
  assert.equal(s?.reason, 'MaxEpisodesReached');
  for (let n = 1; n <= 3; n++) {
    const log = readFileSync(join(dir, `.episodic/logs/default/checked/episode-${n}.log`), 'utf8');
    assert.match(log, new RegExp(`^episode ${n} on record$`, 'm'), `episode ${n}`);
    // Each log gets its own episode's stderr, once, as a marked line.
    assert.equal(log.match(/^\[stderr\] stderr of \d+$/gm)?.join(), `[stderr] stderr of ${n}`, log);
  }
});

test('kill -9 while verify runs, restart: the verify process is killed too (it carries the episode marker)', async () => {
  const dir = tempDir();
  const pidFile = join(dir, 'verify.pid');
  // First verify: write its pid and hang; later ones pass at once.
  const verify = join(dir, 'verify.sh');
  writeFileSync(
    verify,
    `#!/bin/sh\nif [ -e "${pidFile}" ]; then exit 0; fi\necho $$ > "${pidFile}"\nexec sleep 300\n`,
    { mode: 0o755 },
  );
  specDir(
    [
      {
        name: 'verified',
        spec: { completion: { promise: 'COMPLETE', verify: [verify] } },
        script: { default: { mode: 'success' } },
      },
    ],
    { dir },
  );
  const first = startCli(['run', dir]);
  const pid = await waitFor('verify running', () => pidsIn(pidFile)[0]);
  first.child.kill('SIGKILL');
  await first.exited;
  assert.ok(isAlive(pid), 'verify outlives a kill -9 of its controller');
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  await assertAllDead([pid], 'verify after restart');
  const s = readStatus(dir, 'verified')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.episodes, 2, 'episode 1 interrupted during verify, episode 2 verified');
});

test('an unreadable status file stops its task with the file named; it is never overwritten or started over', async () => {
  const dir = tempDir();
  specDir(
    [
      {
        name: 'kept',
        spec: { limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 } },
        script: { default: { mode: 'continue' } },
      },
      { name: 'other', script: { default: { mode: 'success' } } },
    ],
    { dir },
  );
  const first = await runCli(['run', dir]);
  assert.equal(first.code, 1);
  assert.equal(readStatus(dir, 'kept')?.status.reason, 'MaxEpisodesReached');
  const file = join(dir, '.episodic/status/default/kept.json');
  const broken = readFileSync(file, 'utf8').replace(/"costUSD": [0-9.e+-]+/, '"costUSD": null');
  writeFileSync(file, broken);
  writeFileSync(
    join(dir, 'kept.yaml'),
    readFileSync(join(dir, 'kept.yaml'), 'utf8').replace('"maxEpisodes": 3', '"maxEpisodes": 5'),
  );
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 1);
  assert.equal(readFileSync(file, 'utf8'), broken, 'left as it was');
  assert.match(second.stdout + second.stderr, /kept\.json: unreadable status file/);
  assert.match(
    second.stdout + second.stderr,
    /cannot run: .*kept\.json: unreadable status file.*fix or remove the file/,
  );
  assert.ok(!existsSync(join(dir, '.episodic/logs/default/kept/episode-4.log')), 'no episode started over or went on');
  assert.equal(readStatus(dir, 'other')?.status.phase, 'Succeeded');
});

test('stale status temp files of a writer killed mid-write are cleaned up at start; the lock file always names its owner', async () => {
  const dir = tempDir();
  specDir([{ name: 'tidy', script: { default: { mode: 'success' } } }], { dir });
  const stale = join(dir, '.episodic/status/default/tidy.json.4242.abc.tmp');
  mkdirSync(join(dir, '.episodic/status/default'), { recursive: true });
  writeFileSync(stale, '{"half": ');
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(existsSync(stale), false);
  // An empty lock file is an owner mid-write in the old scheme; now a lock never exists without its pid.
  const lock = startCli(['run', dir, '--watch']);
  const text = await waitFor('the lock', () =>
    existsSync(join(dir, '.episodic/lock')) ? readFileSync(join(dir, '.episodic/lock'), 'utf8') : undefined,
  );
  assert.match(text, /^\d+\n$/);
  lock.child.kill('SIGINT');
  await lock.exited;
});
