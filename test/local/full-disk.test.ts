// A full state disk, for real: the state directory is a 1 MiB tmpfs mounted in an unprivileged user and
// mount namespace (unshare -rm), and an agent's output fills it. `run` says so in one line and exits 3
// keeping what is recorded; `run --watch` waits and resumes once there is room.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StoredStatusSchema } from '../../controller/sinks/local/file-status.ts';
import { cliEntry } from '../support/cli-entry.ts';
import { CLI_HANG_GUARD_MS, hangGuardMessage } from '../support/hang-guard.ts';
import { NODE, specDir, tempDir } from '../support/local.ts';

// Runs inside the namespace (root there, nobody outside): mounts the tmpfs, runs the CLI, frees the space,
// and reports what it saw as JSON. The tmpfs goes with the namespace, so what the test checks is copied out.
const DRIVER = `
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
const [node, cli, dir, state, out, mode] = process.argv.slice(2);
execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', state]);
const bigLog = join(state, 'logs/default/big/episode-1.log');
// The big agent's output: its log, and the spool files it wrote into (kept while the log has no room).
const freeBig = () => { for (const f of [bigLog, bigLog + '.agent-stdout', bigLog + '.agent-stderr']) rmSync(f, { force: true }); };
const phase = (name) => { try { return JSON.parse(readFileSync(join(state, 'status/default', name + '.json'), 'utf8')).status.phase; } catch { return undefined; } };
const until = async (what, probe, ms = 30000) => { const end = Date.now() + ms; while (!probe()) { if (Date.now() > end) throw new Error('timed out: ' + what); await new Promise((r) => setTimeout(r, 50)); } };
const run = (args) => new Promise((done) => {
  const child = spawn(node, [cli, ...args, '--state-dir', state, '--log-format', 'json'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.on('exit', (code) => done({ code, stderr }));
});
const report = {};
if (mode === 'once') {
  report.first = await run(['run', dir]);
  cpSync(state, join(out, 'first'), { recursive: true });
  freeBig(); // room again
  report.second = await run(['run', dir]);
  cpSync(state, join(out, 'second'), { recursive: true });
} else {
  const child = spawn(node, [cli, 'run', dir, '--watch', '--state-dir', state, '--log-format', 'json'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((r) => child.on('exit', (code) => r(code)));
  await until('the disk full', () => stderr.includes('the state disk is full'));
  // small's first agent ends while the disk is full: its end cannot be recorded, and nothing may start.
  const runs = join(dir, 'ws/small/runs.jsonl');
  await until('small started', () => existsSync(runs));
  const pid = JSON.parse(readFileSync(runs, 'utf8').split(String.fromCharCode(10))[0]).pid;
  await until('small episode 1 exited', () => !existsSync('/proc/' + pid));
  report.whileFull = { small: phase('small'), big: phase('big') };
  await until('the big log', () => existsSync(bigLog));
  freeBig(); // room again
  await until('both Succeeded', () => phase('small') === 'Succeeded' && phase('big') === 'Succeeded');
  child.kill('SIGINT');
  report.watch = { code: await exited, stderr };
  cpSync(state, join(out, 'watch'), { recursive: true });
}
console.log(JSON.stringify(report));
`;

interface Report {
  first?: { code: number; stderr: string };
  second?: { code: number; stderr: string };
  watch?: { code: number; stderr: string };
  whileFull?: Record<string, string | undefined>;
}

function inNamespace(mode: 'once' | 'watch'): { report: Report; out: string } {
  const work = tempDir();
  const dir = join(work, 'spec');
  const state = join(work, 'state');
  const out = join(work, 'out');
  execFileSync('mkdir', ['-p', dir, state, out]);
  // big: 2 MiB of output into a 1 MiB disk, then success; small: succeeds in its second episode.
  specDir(
    [
      {
        name: 'big',
        script: { episodes: { '1': { mode: 'chatty', chattyMB: 2, then: 'success' } }, default: { mode: 'success' } },
      },
      {
        name: 'small',
        script: {
          episodes: { '1': { mode: 'continue', delayMs: 300 } },
          default: { mode: 'success', delayMs: 300 },
          record: 'runs.jsonl',
        },
      },
    ],
    { dir },
  );
  const driver = join(work, 'driver.mjs');
  writeFileSync(driver, DRIVER);
  const argv = ['--user', '--map-root-user', '--mount', NODE, driver, NODE, cliEntry(), dir, state, out, mode];
  let stdout: string;
  try {
    stdout = execFileSync('unshare', argv, { encoding: 'utf8', timeout: CLI_HANG_GUARD_MS });
  } catch (err) {
    // The driver's runs are bounded by their own waits: only a hang reaches the guard, and it says so.
    if ((err as NodeJS.ErrnoException).code === 'ETIMEDOUT')
      throw new Error(hangGuardMessage(`the full-disk driver (${mode})`, CLI_HANG_GUARD_MS), { cause: err });
    throw err;
  }
  return { report: JSON.parse(stdout.trim().split('\n').pop() as string) as Report, out };
}

const statusIn = (root: string, name: string) =>
  StoredStatusSchema.parse(JSON.parse(readFileSync(join(root, 'status/default', `${name}.json`), 'utf8'))).status;

test('run: a full state disk is said in one line, no stack; exit 3, what is recorded is kept; the next run finishes', () => {
  const { report, out } = inNamespace('once');
  const first = report.first!;
  assert.equal(first.code, 3, first.stderr);
  const full = first.stderr.split('\n').filter((l) => l.includes('the state disk is full'));
  assert.equal(full.length, 2, `one log line and the final message:\n${first.stderr}`);
  assert.match(
    first.stderr,
    /episodic run: the state disk is full: cannot write to \S+ \(ENOSPC: no space left on device\)\. No new episode was started/,
  );
  assert.doesNotMatch(first.stderr, /"stack"|will retry/, 'no stack traces, no retry chatter');
  // Every status on record still reads (atomic writes), and none moved past what the disk holds.
  for (const name of ['big', 'small']) assert.ok(statusIn(join(out, 'first'), name));
  const second = report.second!;
  assert.equal(second.code, 0, second.stderr);
  assert.equal(statusIn(join(out, 'second'), 'big').phase, 'Succeeded');
  assert.equal(statusIn(join(out, 'second'), 'small').phase, 'Succeeded');
});

test('run --watch: a full state disk waits (said once), starts nothing, and resumes when there is room', () => {
  const { report } = inNamespace('watch');
  const { stderr } = report.watch!;
  assert.equal(stderr.split('\n').filter((l) => l.includes('the state disk is full')).length, 1, stderr);
  assert.deepEqual(
    report.whileFull,
    { small: 'Running', big: 'Running' },
    'on disk while full: both episodes 1 running',
  );
  const lines = stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; task?: string; event?: string; episode?: number });
  const at = (p: (l: (typeof lines)[number]) => boolean) => lines.findIndex(p);
  const room = at((l) => l.msg.includes('the state disk has room again'));
  assert.ok(room > at((l) => l.msg.includes('the state disk is full')), stderr);
  // small's episode 1 ended while the disk was full: its end is recorded, and episode 2 starts, only after.
  // Its agent writes its output onto that disk itself, so it may have failed for lack of room: transient then.
  const ended = (l: (typeof lines)[number]) => l.event === 'EpisodeFinished' || l.event === 'EpisodeRetrying';
  assert.ok(at((l) => l.task === 'small' && ended(l) && l.episode === 1) > room, stderr);
  assert.ok(at((l) => l.task === 'small' && l.event === 'EpisodeStarted' && l.episode === 2) > room, stderr);
  assert.doesNotMatch(stderr, /"stack"/);
  assert.equal(report.watch!.code, 130, 'stopped by the test with SIGINT');
});
