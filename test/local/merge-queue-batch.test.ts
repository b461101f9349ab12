// The merge queue's batches end to end (real git, `episodic run`): gateless tasks waiting together are rebased
// one onto the other and `into` is pushed once for them all; a conflict mid-batch ends the batch before that
// task; a kill -9 after the batch's push landed and before any status said so pushes nothing again.
// Pushes are counted from the remote's reflog of main (one entry per update).
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
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

/** The remote logs every update of main from here on (a bare repository does not by default). */
function countPushes(bare: string): () => number {
  git(bare, 'config', 'core.logAllRefUpdates', 'true');
  return () => {
    const log = join(bare, 'logs/refs/heads/main');
    return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').length : 0;
  };
}

/**
 * `first` integrates alone (it has a queue gate) and its gate holds until `go` exists; the others depend on it,
 * so they succeed while it waits and enter the queue together, oldest first, behind it.
 */
function heldFirst(go: string, others: Array<[string, Record<string, string>]>) {
  const hold = `const f=require('fs');while(!f.existsSync(${JSON.stringify(go)}))Atomics.wait(new Int32Array(new SharedArrayBuffer(4)),0,0,50)`;
  const first = task('first', lineEdit(1, 'first'), { gates: [{ name: 'hold', check: [NODE, '-e', hold] }] });
  const rest = others.map(([name, env]) => {
    const t = task(name, env);
    (t.spec as Record<string, unknown>).dependsOn = ['first'];
    return t;
  });
  return [first, ...rest];
}

const succeeded = (dir: string, names: readonly string[]) =>
  names.every((n) => readStatus(dir, n)?.status.phase === 'Succeeded');

/** Runs the controller; once `names` all succeeded, lets the first task's gate pass. */
async function runHeld(dir: string, names: readonly string[]): Promise<void> {
  const run = startCli(['run', dir]);
  await waitFor('the batch tasks succeeded', () => succeeded(dir, names), 90_000);
  writeFileSync(join(dir, 'go'), '');
  assert.equal(await run.exited, 0, run.output());
}

/** Each task integrated at its own commit, every one of them on main. */
function assertOwnCommits(dir: string, bare: string, names: readonly string[]): void {
  const onMain = new Set(git(bare, 'rev-list', 'main').split('\n'));
  const commits = names.map((n) => {
    const integrate = readStatus(dir, n)?.status.integrate;
    assert.equal(integrate?.result, 'integrated', `${n}: ${JSON.stringify(integrate)}`);
    assert.ok(integrate?.commit && onMain.has(integrate.commit), `${n}'s commit ${integrate?.commit} is on main`);
    return integrate.commit;
  });
  assert.equal(new Set(commits).size, names.length, `one commit each: ${commits}`);
}

test('merge queue batch: four gateless tasks waiting together are integrated with one push, linear, each once', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  const pushes = countPushes(bare);
  const names = ['b1', 'b2', 'b3', 'b4'];
  specDir(
    heldFirst(
      join(dir, 'go'),
      names.map((n, i) => [n, lineEdit(10 * (i + 1), n)]),
    ),
    { dir },
  );
  await runHeld(dir, names);
  assertOnceOnMain(bare, ['first', ...names]);
  assertLinear(bare, 6);
  assertOwnCommits(dir, bare, ['first', ...names]);
  assert.equal(pushes(), 2, "first's push, then one for the four");
  for (const n of names) assert.equal(readStatus(dir, n)?.status.integrate?.attempts, 1, `${n}: rebased once`);
  assertNoLeftovers(dir);
});

test('merge queue batch: a conflict mid-batch ends the batch before it; that task goes on alone to its resolution', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  const pushes = countPushes(bare);
  // c2 and c3 edit one line: whichever comes later in the batch conflicts there (never first: the other is ahead).
  const names = ['c1', 'c2', 'c3', 'c4'];
  const lines = { c1: 10, c2: 20, c3: 20, c4: 40 };
  specDir(
    heldFirst(
      join(dir, 'go'),
      names.map((n) => [n, lineEdit(lines[n as keyof typeof lines], n)]),
    ),
    { dir },
  );
  await runHeld(dir, names);
  const main = git(bare, 'show', 'main:shared.txt');
  assertOnceOnMain(bare, ['first', 'c1', 'c4']);
  for (const n of ['c2', 'c3']) assert.equal(main.split('\n').filter((l) => l === n).length, 1, `${n} kept once`);
  assert.doesNotMatch(main, /<<<<<<<|>>>>>>>|=======/);
  assertLinear(bare, 6);
  assertOwnCommits(dir, bare, ['first', ...names]);
  const episodes = names.map((n) => readStatus(dir, n)?.status.integrate?.episodes ?? 0);
  assert.deepEqual(
    episodes.filter((e) => e > 0),
    [1],
    `one resolution episode, of c2 or c3: ${episodes}`,
  );
  assert.equal(episodes[0] + episodes[3], 0);
  // first; the batch up to the conflict; the conflicting task alone; whatever was behind it (none if it was last).
  assert.ok(pushes() >= 3 && pushes() <= 4, `pushes: ${pushes()}`);
  assertNoLeftovers(dir);
});

test('merge queue batch: kill -9 after the batch push landed, before any status said so → all integrated, no second push', async () => {
  const dir = tempDir();
  const bare = origin(dir);
  const pushes = countPushes(bare);
  const names = ['k1', 'k2', 'k3'];
  specDir(
    heldFirst(
      join(dir, 'go'),
      names.map((n, i) => [n, lineEdit(10 * (i + 2), n)]),
    ),
    { dir },
  );
  // The queue's clone made ahead, its remote's receive-pack a wrapper: first's push goes through; the second
  // (the batch's) lands, then the connection is held until the controller is gone.
  const mark = join(dir, 'mark');
  const wrapper = join(dir, 'slow-receivepack');
  const count = join(dir, 'receive-count');
  writeFileSync(
    wrapper,
    `#!/bin/sh\necho x >> ${count}\ngit-receive-pack "$@"\n[ "$(wc -l < ${count})" -lt 2 ] && exit 0\necho landed > ${mark}\nwhile [ ! -f ${mark}.go ]; do sleep 0.05; done\n`,
  );
  chmodSync(wrapper, 0o755);
  const clone = join(dir, '.episodic/merge-queue/q/clone');
  mkdirSync(join(dir, '.episodic/merge-queue/q'), { recursive: true });
  git(dir, 'clone', '--quiet', bare, clone);
  git(clone, 'config', 'remote.origin.receivepack', wrapper);

  const run = startCli(['run', dir]);
  await waitFor('the batch tasks succeeded', () => succeeded(dir, names), 90_000);
  writeFileSync(join(dir, 'go'), '');
  await waitFor('the batch push landed', () => existsSync(mark) && readFileSync(mark, 'utf8') !== '', 90_000);
  run.child.kill('SIGKILL');
  await run.exited;
  assert.equal(pushes(), 2, 'the batch is on main');
  for (const n of names) assert.notEqual(readStatus(dir, n)?.status.integrate?.result, 'integrated', `${n} not yet`);
  git(clone, 'config', '--unset', 'remote.origin.receivepack');
  writeFileSync(`${mark}.go`, '');

  const res = await runCli(['run', dir], { timeoutMs: 120_000 });
  assert.equal(res.code, 0, res.stderr);
  assert.equal(pushes(), 2, 'nothing pushed after the restart');
  assertOnceOnMain(bare, ['first', ...names]);
  assertLinear(bare, 5);
  assertOwnCommits(dir, bare, ['first', ...names]);
  assertNoLeftovers(dir);
});
