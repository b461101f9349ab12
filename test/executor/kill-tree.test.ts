// Timeouts, cancellation and orphan killing leave no process of the episode's tree alive: the fake agent's
// sleep mode starts a same-group child, a setsid'd child, a double-forked orphan and a SIGTERM-ignorer.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startProcessEpisode } from '../../controller/executors/process/process-episode.ts';
import {
  killOrphanEpisode,
  killProcessTree,
  pidCursor,
  readPidStartTime,
  readProcStat,
  TREE_MARKER_ENV,
} from '../../controller/executors/process/process-tree.ts';
import { FAKE_CLAUDE, isGone, readPidFile, request, sandboxPerTest } from './support.ts';
import { waitFor } from '../support/wait.ts';

const t = sandboxPerTest();

function assertAllGone(pids: number[]): void {
  assert.equal(pids.length, 5, 'agent + 4 descendants');
  for (const pid of pids) assert.ok(isGone(pid), `pid ${pid} survived`);
}

/** A marker unique to this test process: a marker shared with a concurrently running suite would mix their sleepers. */
const uniqueMarker = (name: string) => `${name}-${process.pid}`;

/** Start the fake agent in sleep mode outside any executor, as a previous controller would have. */
function startDetachedSleeper(pidFile: string, marker?: string) {
  const child = spawn(process.execPath, [FAKE_CLAUDE], {
    cwd: t.box.ws,
    detached: true,
    stdio: 'ignore',
    env: {
      ...process.env,
      FAKE_AGENT_MODE: 'sleep',
      FAKE_AGENT_PID_FILE: pidFile,
      ...(marker ? { [TREE_MARKER_ENV]: marker } : {}),
    },
  });
  child.unref();
  return child.pid!;
}

describe('episode timeout and cancel', () => {
  test('timeout: SIGTERM then SIGKILL to the whole tree; no descendant survives', async () => {
    const pidFile = join(t.box.root, 'pids');
    const started = Date.now();
    const running = await startProcessEpisode(
      request(t.box, {
        timeoutMs: 2500,
        killGraceMs: 300,
        env: { FAKE_AGENT_MODE: 'sleep', FAKE_AGENT_PID_FILE: pidFile, FAKE_AGENT_IGNORE_SIGTERM: '1' },
      }),
    );
    t.leftovers = await readPidFile(pidFile);
    const result = await running.result;
    assert.equal(result.timedOut, true);
    assert.equal(result.cancelled, false);
    assert.equal(result.exitCode, null);
    assert.equal(result.signal, 'SIGKILL', 'the agent ignored SIGTERM');
    assert.match(result.message ?? '', /timed out after 3s/);
    assert.ok(Date.now() - started < 8000);
    assertAllGone(t.leftovers);
  });

  test('cancel mid-episode kills the tree and reports cancelled', async () => {
    const pidFile = join(t.box.root, 'pids');
    const running = await startProcessEpisode(
      request(t.box, { env: { FAKE_AGENT_MODE: 'sleep', FAKE_AGENT_PID_FILE: pidFile } }),
    );
    t.leftovers = await readPidFile(pidFile);
    assert.equal(t.leftovers[0], running.pid);
    running.cancel();
    running.cancel(); // idempotent
    const result = await running.result;
    assert.equal(result.cancelled, true);
    assert.equal(result.timedOut, false);
    assert.equal(result.signal, 'SIGTERM');
    assert.equal(result.message, 'cancelled');
    assertAllGone(t.leftovers);
  });

  test('a gracefully exiting agent gets exactly one SIGTERM and its exit code is kept', async () => {
    const counter = join(t.box.root, 'terms');
    const script = [
      "const fs = require('node:fs');",
      `process.on('SIGTERM', () => { fs.appendFileSync(${JSON.stringify(counter)}, 'T'); setTimeout(() => process.exit(7), 300); });`,
      `fs.writeFileSync(${JSON.stringify(counter)}, '');`,
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const running = await startProcessEpisode(
      request(t.box, { argv: [process.execPath, '-e', script], killGraceMs: 3000 }),
    );
    t.leftovers = [running.pid!];
    await waitFor('the agent to start', () => existsSync(counter));
    running.cancel();
    const result = await running.result;
    assert.equal(readFileSync(counter, 'utf8'), 'T');
    assert.equal(result.exitCode, 7);
    assert.equal(result.cancelled, true);
  });
});

describe('killProcessTree', () => {
  test('kills a tree found through ppid links, the group and the env marker', async () => {
    const pidFile = join(t.box.root, 'pids');
    const pid = startDetachedSleeper(pidFile, uniqueMarker('marker-kill-tree-test'));
    t.leftovers = await readPidFile(pidFile);
    await killProcessTree(pid, { graceMs: 300, marker: uniqueMarker('marker-kill-tree-test') });
    assertAllGone(t.leftovers);
  });

  test('given a pid cursor from before the start, looks at newer processes only and still finds the whole tree', async () => {
    const olderFile = join(t.box.root, 'older-pids');
    const marker = uniqueMarker('marker-cursor-test');
    // Carries the marker but started before the cursor: not one of the tree's processes, so left alone.
    startDetachedSleeper(olderFile, marker);
    const older = await readPidFile(olderFile);
    t.leftovers = [...older];
    const after = pidCursor();
    assert.ok(after, 'Linux /proc');
    const pidFile = join(t.box.root, 'pids');
    const pid = startDetachedSleeper(pidFile, marker);
    const tree = await readPidFile(pidFile);
    t.leftovers.push(...tree);
    await killProcessTree(pid, { graceMs: 300, marker, after });
    assertAllGone(tree);
    for (const p of older) assert.ok(!isGone(p), `older pid ${p} was killed`);
    // A cursor the pid counter may have gone round since (too many forks) means looking at every process.
    await killProcessTree(older[0], { graceMs: 300, marker, after: { ...after, forks: after.forks - 10_000_000 } });
    assertAllGone(older);
  });

  test('without the marker, a double-forked orphan is out of reach but everything else dies', async () => {
    const pidFile = join(t.box.root, 'pids');
    const pid = startDetachedSleeper(pidFile);
    t.leftovers = await readPidFile(pidFile);
    await killProcessTree(pid, { graceMs: 300 });
    const [agent, sameGroup, setsid, orphan, ignorer] = t.leftovers;
    for (const p of [agent, sameGroup, setsid, ignorer]) assert.ok(isGone(p), `pid ${p} survived`);
    assert.ok(!isGone(orphan), 'documents the limit: no ppid, group or marker link to the orphan');
  });

  test('leaves a pid alone whose start time says it is another process now', async () => {
    const pidFile = join(t.box.root, 'pids');
    const pid = startDetachedSleeper(pidFile);
    t.leftovers = await readPidFile(pidFile);
    await killProcessTree(pid, { graceMs: 100, startTime: '1', pgid: pid });
    for (const p of t.leftovers.filter((p) => p !== t.leftovers[3])) assert.ok(!isGone(p), `pid ${p} was killed`);
  });

  test('a pid that does not exist is a no-op: no other process is signalled, no grace period waited out', async () => {
    const pidFile = join(t.box.root, 'pids');
    startDetachedSleeper(pidFile, uniqueMarker('marker-bystander'));
    t.leftovers = await readPidFile(pidFile);
    const started = Date.now();
    // Above the largest pid Linux hands out (2^22), so it never exists.
    await killProcessTree(2 ** 22 + 12345, { graceMs: 10_000 });
    // Had anything been signalled, the SIGTERM-ignorer among the bystanders would have kept it waiting 10 s.
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
    for (const p of t.leftovers) assert.ok(!isGone(p), `bystander ${p} was killed`);
  });
});

describe('killOrphanEpisode', () => {
  test('kills the whole tree of a live episode whose start time matches', async () => {
    const pidFile = join(t.box.root, 'pids');
    const pid = startDetachedSleeper(pidFile, uniqueMarker('marker-orphan-test'));
    t.leftovers = await readPidFile(pidFile);
    const startTime = readPidStartTime(pid);
    assert.ok(startTime);
    assert.equal(await killOrphanEpisode(pid, String(Number(startTime) + 1), { graceMs: 300 }), false);
    assert.ok(!isGone(pid), 'a start-time mismatch (pid reuse) leaves the process alone');
    assert.equal(await killOrphanEpisode(pid, undefined), false);
    assert.equal(await killOrphanEpisode(pid, startTime, { graceMs: 300 }), true);
    assertAllGone(t.leftovers);
    assert.equal(await killOrphanEpisode(pid, startTime), false, 'nothing left to kill');
  });

  test('an episode started by startProcessEpisode can be found again from its pid and start time', async () => {
    const pidFile = join(t.box.root, 'pids');
    const running = await startProcessEpisode(
      request(t.box, { env: { FAKE_AGENT_MODE: 'sleep', FAKE_AGENT_PID_FILE: pidFile } }),
    );
    t.leftovers = await readPidFile(pidFile);
    assert.equal(await killOrphanEpisode(running.pid!, running.pidStartTime, { graceMs: 300 }), true);
    assertAllGone(t.leftovers);
    const result = await running.result;
    assert.equal(result.exitCode, null);
    assert.equal(result.signal, 'SIGTERM');
  });

  test('refuses our own pid and nonsense pids', async () => {
    assert.equal(await killOrphanEpisode(process.pid, readPidStartTime(process.pid)), false);
    assert.equal(await killOrphanEpisode(1, '1'), false);
    assert.equal(await killOrphanEpisode(-5, '1'), false);
  });
});

describe('readProcStat', () => {
  test('parses a command name with spaces and parentheses', async () => {
    const dir = join(t.box.root, 'bin');
    mkdirSync(dir);
    const weird = join(dir, 'a b) (c');
    symlinkSync('/bin/sleep', weird);
    const child = spawn(weird, ['30'], { stdio: 'ignore' });
    t.leftovers = [child.pid!];
    await waitFor('exec', () => readFileSync(`/proc/${child.pid}/comm`, 'utf8').startsWith('a b) (c'));
    const stat = readProcStat(child.pid!);
    assert.equal(stat?.ppid, process.pid);
    assert.match(stat?.startTime ?? '', /^\d+$/);
    child.kill('SIGKILL');
  });
});
