// Part (d): many long-running episodes at once. N tasks (one file each) whose agent sleeps S seconds, all
// running under one `episodic run --max-concurrent N`. Measured from /proc, the controller process only:
//   1. CPU (utime+stime) while all N run: from a second after the N-th episode started until a second
//      before the first could end;
//   2. RSS: VmRSS sampled over that window, and the peak (VmHWM) of the whole run until then.
//
//   node bench/local/concurrent.ts [--quick] [--size N] [--cli PATH] [--keep]
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchOptions, PartResult } from './lib.ts';
import {
  benchTaskDoc,
  cliArgv,
  cpuSeconds,
  LogTail,
  memoryMB,
  metric,
  pollUntil,
  progress,
  removeDir,
  round,
  runAlone,
  spawnTo,
  stop,
  tempDir,
} from './lib.ts';

const GOAL_CPU_PERCENT = 2;
const GOAL_RSS_MB = 250;

export async function benchConcurrent(opts: BenchOptions): Promise<PartResult> {
  const started = performance.now();
  const n = opts.size ?? (opts.quick ? 50 : 500);
  const sleepSeconds = opts.quick ? 5 : 30;
  const root = tempDir('concurrent');
  const specs = join(root, 'specs');
  mkdirSync(specs, { recursive: true });
  const agent = join(root, 'agent.sh');
  writeFileSync(agent, `#!/bin/sh\nexec sleep ${sleepSeconds}\n`);
  chmodSync(agent, 0o755);
  const width = String(n - 1).length;
  for (let i = 0; i < n; i++) {
    const name = `c${String(i).padStart(width, '0')}`;
    writeFileSync(
      join(specs, `${name}.yaml`),
      benchTaskDoc(name, agent, { maxEpisodes: 1, onExitZero: true, episodeTimeoutSeconds: sleepSeconds + 120 }),
    );
  }
  progress(`[concurrent] ${n} tasks, agents sleep ${sleepSeconds} s, --max-concurrent ${n}, in ${root}`);
  const stderr = join(root, 'controller.err');
  const args = ['run', specs, '--max-concurrent', String(n), '--state-dir', join(root, 'state'), '--log-level', 'info'];
  const s = spawnTo(cliArgv(opts, args, 'concurrent'), { stdout: join(root, 'controller.out'), stderr });
  const tail = new LogTail(stderr);
  let startedCount = 0;
  let firstStartedAt = 0;
  let succeeded = 0;
  const poll = () => {
    for (const line of tail.poll()) {
      if (line.event === 'EpisodeStarted' && startedCount++ === 0) firstStartedAt = Date.now();
      if (line.event === 'EpisodeSucceeded') succeeded++;
    }
  };
  const alive = () => s.child.exitCode === null && s.child.signalCode === null;
  try {
    await pollUntil(`${n} episodes to start`, () => startedCount >= n, {
      timeoutMs: 120_000,
      intervalMs: 50,
      onTick: poll,
      alive,
    });
    const allStartedMs = Date.now() - s.startedAt;
    progress(
      `[concurrent] all ${n} running ${allStartedMs} ms after the CLI started (first one at ${firstStartedAt - s.startedAt} ms)`,
    );
    await sleep(1000);
    const windowEnd = firstStartedAt + sleepSeconds * 1000 - 1000;
    const cpu0 = cpuSeconds(s.pid) ?? NaN;
    const t0 = Date.now();
    let rssMax = 0;
    while (Date.now() < windowEnd) {
      rssMax = Math.max(rssMax, memoryMB(s.pid)?.rss ?? 0);
      await sleep(Math.min(250, Math.max(0, windowEnd - Date.now())));
    }
    const windowSeconds = (Date.now() - t0) / 1000;
    const cpuPercent = (((cpuSeconds(s.pid) ?? NaN) - cpu0) / windowSeconds) * 100;
    const peak = memoryMB(s.pid)?.hwm ?? NaN;
    if (startedCount > n) throw new Error(`more episodes started (${startedCount}) than tasks (${n})`);
    await pollUntil(`${n} tasks to succeed`, () => succeeded >= n, {
      timeoutMs: sleepSeconds * 1000 + 120_000,
      intervalMs: 200,
      onTick: poll,
      alive,
    });
    // The last "succeeded" line comes just before the run settles and exits on its own: give it time to.
    await Promise.race([s.exited, sleep(30_000)]);
    const code = await stop(s);
    if (code !== 0) throw new Error(`episodic run exited ${code}; see ${stderr} (use --keep)`);
    return {
      part: 'd',
      title: `${n} concurrent episodes of ${sleepSeconds} s under one controller`,
      seconds: round((performance.now() - started) / 1000, 1),
      metrics: [
        metric('allStartedSeconds', `CLI start → all ${n} episodes running`, allStartedMs / 1000, 's'),
        metric(
          'cpuPercent',
          `controller CPU while ${n} run (${windowSeconds.toFixed(0)} s, % of one core)`,
          cpuPercent,
          '%',
          { op: '<=', value: GOAL_CPU_PERCENT },
        ),
        metric('rssMB', `controller RSS while ${n} run (max sampled)`, rssMax, 'MB', { op: '<=', value: GOAL_RSS_MB }),
        metric('peakRssMB', '  peak until then (VmHWM, start-up included)', peak, 'MB'),
      ],
      details: { n, sleepSeconds, allStartedMs, windowSeconds, cpuPercent, rssMaxMB: rssMax, peakRssMB: peak },
    };
  } finally {
    if (alive()) await stop(s, 5000);
    removeDir(root, opts.keep);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runAlone(benchConcurrent, process.argv.slice(2));
