// The spawn helper (spawn-helper.pl + spawn-helper.ts) on its own: exact argv/env/cwd delivery without a
// shell, exit codes and signals matched to the right request under concurrency, exec failures, the cheap
// "anything left behind?" check, and what happens when the helper itself dies mid-episode.
import { strict as assert } from 'node:assert';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startProcessEpisode } from '../../controller/executors/process-episode.ts';
import { killProcessTree } from '../../controller/executors/process-tree.ts';
import { SpawnHelper, sharedSpawnHelper } from '../../controller/executors/spawn-helper.ts';
import type { HelperSpawnRequest } from '../../controller/executors/spawn-helper.ts';
import { isGone, request, sandboxPerTest, waitFor } from './support.ts';

const t = sandboxPerTest();
const helper = await SpawnHelper.start();
after(() => helper.close());

function req(argv: string[], more: Partial<HelperSpawnRequest> = {}): HelperSpawnRequest {
  mkdirSync(join(t.box.root, 'out'), { recursive: true });
  return { argv, cwd: t.box.ws, env: {}, stdoutFile: join(t.box.root, 'out', 'o.log'), stderrFile: join(t.box.root, 'out', 'e.log'), ...more };
}

test('argv, env, cwd and stdin reach the process exactly, with no shell in between', async () => {
  const stdin = join(t.box.root, 'in.txt');
  writeFileSync(stdin, 'from stdin\n');
  const script = 'process.stdout.write(JSON.stringify({ argv: process.argv.slice(1), cwd: process.cwd(), v: process.env.WEIRD, stdin: require("fs").readFileSync(0, "utf8") }))';
  const weird = ['a b', '"quoted"', "$(touch pwned)", '*', 'naïve ✓', ''];
  const started = await helper.spawn(req([process.execPath, '-e', script, ...weird], { env: { WEIRD: 'x=y\nz' }, stdinFile: stdin }));
  assert.ok(started.ok);
  assert.deepEqual(await started.exit, { code: 0 });
  const seen = JSON.parse(readFileSync(join(t.box.root, 'out', 'o.log'), 'utf8'));
  assert.deepEqual(seen.argv, weird);
  assert.equal(seen.cwd, t.box.ws);
  assert.equal(seen.v, 'x=y\nz');
  assert.equal(seen.stdin, 'from stdin\n');
});

test('exit codes and signals go to the right request when many run at once', async () => {
  const runs = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      helper.spawn(req(['/bin/sh', '-c', i % 4 === 0 ? 'kill -TERM $$' : `sleep 0.0${i % 7}; exit ${i}`])),
    ),
  );
  const exits = await Promise.all(runs.map((r) => (r.ok ? r.exit : Promise.reject(new Error(r.message)))));
  exits.forEach((e, i) => assert.deepEqual(e, i % 4 === 0 ? { code: null, signal: 'SIGTERM' } : { code: i }, `run ${i}`));
});

test('a command that cannot be exec\'d, or a cwd that does not exist, fails with its errno and nothing runs', async () => {
  const missing = await helper.spawn(req(['episodic-no-such-command-xyz']));
  assert.deepEqual(missing.ok ? 'started' : [missing.code, missing.message], ['ENOENT', 'cannot start episodic-no-such-command-xyz: No such file or directory']);
  const notExecutable = join(t.box.root, 'plain.txt');
  writeFileSync(notExecutable, 'hello');
  const denied = await helper.spawn(req([notExecutable]));
  assert.equal(denied.ok ? 'started' : denied.code, 'EACCES');
  const noCwd = await helper.spawn(req(['/bin/true'], { cwd: join(t.box.root, 'gone') }));
  assert.match(noCwd.ok ? 'started' : `${noCwd.code} ${noCwd.message}`, /^ENOENT cannot enter .*gone/);
});

test('a held child runs nothing until release(); then it execs with its pid unchanged', async () => {
  const marker = join(t.box.root, 'ran');
  const started = await helper.spawn(req(['/bin/sh', '-c', `echo $$ > ${marker}`], { hold: true }));
  assert.ok(started.ok);
  await sleep(200);
  assert.equal(existsSync(marker), false, 'held: not exec\'d yet');
  assert.equal(readFileSync(`/proc/${started.pid}/stat`, 'utf8').split(' ')[1], '(perl)', 'the held child is still the helper\'s fork');
  started.release();
  started.release(); // idempotent
  assert.deepEqual(await started.exit, { code: 0 });
  assert.equal(readFileSync(marker, 'utf8').trim(), String(started.pid));
});

test('a held child that cannot be set up or exec\'d reports why through its exit, as a spawn error', async () => {
  const started = await helper.spawn(req(['episodic-no-such-command-xyz'], { hold: true }));
  assert.ok(started.ok, 'forked and held');
  started.release();
  const exit = await started.exit;
  assert.deepEqual(exit.spawnError, { code: 'ENOENT', message: 'cannot start episodic-no-such-command-xyz: No such file or directory' });
  assert.ok(isGone(started.pid));
  // A set-up failure (missing cwd) is known before release: reported whether or not release() comes.
  const noCwd = await helper.spawn(req(['/bin/true'], { cwd: join(t.box.root, 'gone'), hold: true }));
  assert.ok(noCwd.ok);
  const noCwdExit = await noCwd.exit;
  assert.match(`${noCwdExit.spawnError?.code} ${noCwdExit.spawnError?.message}`, /^ENOENT cannot enter .*gone/);
  noCwd.release(); // too late: a no-op
});

test('many held children released out of order all run, each once', async () => {
  const marks = join(t.box.root, 'marks');
  mkdirSync(marks);
  const held = await Promise.all(Array.from({ length: 12 }, (_, i) => helper.spawn(req(['/bin/sh', '-c', `echo $$ > ${join(marks, String(i))}`], { hold: true }))));
  const order = held.map((_, i) => i).reverse();
  for (const i of order) {
    const h = held[i];
    assert.ok(h.ok);
    h.release();
  }
  const exits = await Promise.all(held.map((h) => (h.ok ? h.exit : Promise.reject(new Error('not started')))));
  assert.deepEqual(exits, held.map(() => ({ code: 0 })));
  held.forEach((h, i) => assert.equal(readFileSync(join(marks, String(i)), 'utf8').trim(), String(h.ok && h.pid)));
});

test('held children never start when the controller goes away, and a killed held child is reaped', async () => {
  const own = await SpawnHelper.start();
  const marker = join(t.box.root, 'ran');
  const held = await own.spawn(req(['/bin/sh', '-c', `touch ${marker}`], { hold: true }));
  assert.ok(held.ok);
  const killed = await own.spawn(req(['/bin/sh', '-c', `touch ${marker}`], { hold: true }));
  assert.ok(killed.ok);
  process.kill(-killed.pid, 'SIGTERM');
  assert.deepEqual(await killed.exit, { code: null, signal: 'SIGTERM' });
  own.close(); // what a crashed controller looks like to the helper: EOF on its stdin
  await waitFor('held child gone', () => isGone(held.pid));
  assert.equal(existsSync(marker), false, 'nothing was exec\'d');
});

test('t.leftovers: none after a clean exit; a setsid\'d orphan lands with the helper and is reported', async () => {
  assert.equal(process.platform === 'linux' ? helper.subreaper : true, true, 'subreaper on Linux');
  const clean = await helper.spawn(req(['/bin/sh', '-c', 'exit 0']));
  assert.ok(clean.ok);
  await clean.exit;
  assert.equal(await helper.mayHaveLeftovers(clean.pid), false);

  const pidFile = join(t.box.root, 'orphan.pid');
  const dirty = await helper.spawn(req(['/bin/sh', '-c', `setsid /bin/sh -c 'echo $$ > ${pidFile}; exec sleep 30' & sleep 0.3; exit 0`]));
  assert.ok(dirty.ok);
  await dirty.exit;
  await waitFor('orphan pid', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '');
  const orphan = Number(readFileSync(pidFile, 'utf8').trim());
  t.leftovers.push(orphan);
  assert.equal(await helper.mayHaveLeftovers(dirty.pid), true);
  await killProcessTree(orphan, { graceMs: 200 });
  let reaped = false;
  for (let i = 0; i < 100 && !reaped; i++) {
    reaped = !(await helper.mayHaveLeftovers(dirty.pid));
    if (!reaped) await sleep(20);
  }
  assert.ok(reaped, 'orphan reaped by the helper');
});

test('children forked for spawns still in flight are not mistaken for t.leftovers', async () => {
  // 16 slots kept busy, as the local controller does: every exit is checked while others are starting.
  let next = 0;
  const verdicts: boolean[] = [];
  const slot = async () => {
    while (next < 120) {
      next++;
      const started = await helper.spawn(req(['/bin/true']));
      assert.ok(started.ok);
      await started.exit;
      verdicts.push(await helper.mayHaveLeftovers(started.pid));
    }
  };
  await Promise.all(Array.from({ length: 16 }, slot));
  assert.equal(verdicts.length, 120);
  assert.deepEqual(verdicts.filter(Boolean), [], 'no clean exit may be reported as leaving something behind');
});

test('the helper dying mid-episode: the episode ends as a transient failure and its processes are killed', async () => {
  const own = await SpawnHelper.start();
  const pidFile = join(t.box.root, 'pids');
  const running = await startProcessEpisode(request(t.box, { helper: own, killGraceMs: 200, argv: ['/bin/sh', '-c', `echo $$ > ${pidFile}; sleep 30`] }));
  assert.ok(running.pid);
  t.leftovers.push(running.pid);
  await waitFor('agent running', () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '');
  process.kill(own.pid, 'SIGKILL');
  const result = await running.result;
  assert.equal(result.errorClass, 'transient');
  assert.match(result.message ?? '', /spawn helper exited \(SIGKILL\)/);
  assert.ok(isGone(running.pid), 'the agent was killed');
  const again = await own.spawn(req(['/bin/true']));
  assert.equal(again.ok ? 'started' : again.code, 'EHELPER');
});

test('sharedSpawnHelper: one per process, restarted after it died, none with EPISODIC_SPAWNER=direct', async () => {
  // Callers arriving together (the controller reconciles several tasks at once) all get the one helper.
  const firsts = await Promise.all(Array.from({ length: 5 }, () => sharedSpawnHelper()));
  const first = firsts[0];
  assert.ok(first);
  assert.deepEqual(firsts, firsts.map(() => first), 'concurrent first calls share one helper');
  assert.equal(await sharedSpawnHelper(), first);
  process.kill(first.pid, 'SIGKILL');
  await waitFor('helper seen dead', () => !first.alive);
  const seconds = await Promise.all(Array.from({ length: 5 }, () => sharedSpawnHelper()));
  const second = seconds[0];
  assert.ok(second && second !== first && second.alive);
  assert.deepEqual(seconds, seconds.map(() => second), 'one restart, shared by everyone who asked meanwhile');
  process.env.EPISODIC_SPAWNER = 'direct';
  try {
    assert.equal(await sharedSpawnHelper(), undefined);
  } finally {
    delete process.env.EPISODIC_SPAWNER;
  }
  second.close();
});
