// `episodic suspend NAME [DIR]` / `episodic unsuspend`: a suspend hold in the state directory (not the spec
// file), picked up by a running `episodic run --watch` within a second and by the next `episodic run`,
// audited with who; unsuspend says when spec.suspend still holds the task.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus, runCli, specDir, startCli } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 } };

test('suspend before a run holds the task; unsuspend lets the next run finish it; both audited, the spec file untouched', async () => {
  const dir = specDir([{ name: 'work', spec: fast, script: { default: { mode: 'success' } } }]);
  const spec = readFileSync(join(dir, 'work.yaml'), 'utf8');
  const suspended = await runCli(['suspend', 'work', dir, '--by', 'alice']);
  assert.equal(suspended.code, 0, suspended.stderr);
  assert.match(
    suspended.stdout,
    /^suspend hold set on default\/work by alice \(.*\.episodic\/suspend\/default\/work\.json\)/,
  );

  await runCli(['run', dir]);
  let status = readStatus(dir, 'work')?.status;
  assert.deepEqual([status?.phase, status?.message, status?.episodes], ['Suspended', 'task is suspended by alice', 0]);

  const lifted = await runCli(['unsuspend', 'work', dir, '--by', 'bob']);
  assert.equal(lifted.code, 0, lifted.stderr);
  assert.doesNotMatch(lifted.stdout, /spec\.suspend/);
  assert.equal((await runCli(['run', dir])).code, 0);
  status = readStatus(dir, 'work')?.status;
  assert.equal(status?.phase, 'Succeeded');
  assert.deepEqual(
    status?.audit?.map((a) => [a.action, a.by]),
    [
      ['Suspended', 'user:alice'],
      ['Unsuspended', 'user:bob'],
    ],
  );
  assert.equal(readFileSync(join(dir, 'work.yaml'), 'utf8'), spec);
});

test('suspend while `run --watch` runs the episode stops it within a second; unsuspend starts the next', async () => {
  const dir = specDir([]);
  const go = join(dir, 'go');
  specDir([{ name: 'long', spec: fast, script: { default: { mode: 'success', waitForFile: go } } }], { dir });
  const run = startCli(['run', dir, '--watch', '--no-table']);
  try {
    await waitFor('episode 1 running', () => readStatus(dir, 'long')?.status.currentEpisode?.number === 1);
    assert.equal((await runCli(['suspend', 'long', dir, '--by', 'carol'])).code, 0);
    await waitFor('suspended', () => readStatus(dir, 'long')?.status.phase === 'Suspended');
    await waitFor(
      'episode 1 recorded as cancelled',
      () => readStatus(dir, 'long')?.status.lastEpisode?.outcome === 'cancelled',
    );
    assert.equal((await runCli(['unsuspend', 'long', dir, '--by', 'carol'])).code, 0);
    await waitFor('episode 2 running', () => readStatus(dir, 'long')?.status.currentEpisode?.number === 2);
    writeFileSync(go, '');
    await waitFor('succeeded', () => readStatus(dir, 'long')?.status.phase === 'Succeeded');
  } finally {
    run.child.kill('SIGINT');
    await run.exited;
  }
});

test('unsuspend of a task whose spec says suspend says the spec still holds it; an unknown task is refused', async () => {
  const dir = specDir([{ name: 'paused', spec: { ...fast, suspend: true } }]);
  const lifted = await runCli(['unsuspend', 'paused', dir]);
  assert.equal(lifted.code, 0, lifted.stderr);
  assert.match(lifted.stdout, /spec\.suspend is true: the task stays suspended until its spec says otherwise/);
  const missing = await runCli(['suspend', 'nope', dir]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^episodic suspend: no task default\/nope in the specs in /);
});
