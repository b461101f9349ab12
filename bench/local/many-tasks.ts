// Part (b): many tasks. N task specs (one file each) with an instant agent (`completion.onExitZero: true`, a
// shell script that exits 0), run with `episodic run --watch --max-concurrent 16`. Measured from outside:
//   1. time from spawning the CLI until every spec is loaded, validated and queued (the "specs loaded" log
//      line, and the first EpisodeStarted event line, which comes after the whole batch was queued);
//   2. wall time until the N-th task succeeded, against `xargs -P16` running the same agent N times
//      (measured before and after the controller run; their mean is the baseline);
//   3. peak RSS of the controller (VmHWM from /proc, plus VmRSS sampled every 100 ms);
//   4. CPU use while idle in --watch after everything is done (utime+stime over a window).
// Then the load time once more with the same N tasks as multi-document files (100 documents per file).
//
//   node bench/local/many-tasks.ts [--quick] [--size TASKS] [--idle-seconds S] [--cli PATH] [--keep]
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchOptions, LogLine, PartResult, Spawned } from './lib.ts';
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
  timed,
} from './lib.ts';

const CONCURRENCY = 16;
const DOCS_PER_FILE = 100;

/** Done on the first exit 0: every task is exactly one instant episode. */
const INSTANT_TASK = { maxEpisodes: 3, onExitZero: true, episodeTimeoutSeconds: 600 };

export const INSTANT_AGENT = '#!/bin/sh\nexit 0\n';

function taskName(i: number, n: number): string {
  return `t${String(i).padStart(String(n - 1).length, '0')}`;
}

/** One file per task, or DOCS_PER_FILE documents per file. */
function writeSpecs(dir: string, n: number, agent: string, multiDoc: boolean): void {
  mkdirSync(dir, { recursive: true });
  if (!multiDoc) {
    for (let i = 0; i < n; i++)
      writeFileSync(join(dir, `${taskName(i, n)}.yaml`), benchTaskDoc(taskName(i, n), agent, INSTANT_TASK));
    return;
  }
  for (let start = 0; start < n; start += DOCS_PER_FILE) {
    const docs: string[] = [];
    for (let i = start; i < Math.min(n, start + DOCS_PER_FILE); i++)
      docs.push(benchTaskDoc(taskName(i, n), agent, INSTANT_TASK));
    writeFileSync(join(dir, `tasks-${String(start / DOCS_PER_FILE).padStart(4, '0')}.yaml`), docs.join('---\n'));
  }
}

/** Follows the controller's stderr: the times of the lines the benchmark cares about, relative to spawn. */
class Progress {
  specsLoadedMs?: number;
  firstStartedMs?: number;
  lastSucceededMs?: number;
  succeeded = 0;
  episodesEnded = 0;
  errors: string[] = [];
  finalPhases = new Map<string, number>();
  private readonly tail: LogTail;
  private readonly spawnedAt: number;

  constructor(logFile: string, spawnedAt: number) {
    this.tail = new LogTail(logFile);
    this.spawnedAt = spawnedAt;
  }

  poll(): void {
    for (const line of this.tail.poll()) this.take(line);
  }

  private at(line: LogLine): number | undefined {
    return line.time ? Date.parse(line.time) - this.spawnedAt : undefined;
  }

  private take(line: LogLine): void {
    if (line.msg === 'specs loaded') this.specsLoadedMs = this.at(line);
    else if (line.event === 'EpisodeStarted') this.firstStartedMs ??= this.at(line);
    else if (line.msg === 'final status') {
      const phase = String(line.phase);
      this.finalPhases.set(phase, (this.finalPhases.get(phase) ?? 0) + 1);
    }
    // The event line of an episode's end carries its result.
    if ('exitCode' in line) this.episodesEnded++;
    if (line.event === 'EpisodeSucceeded') {
      this.succeeded++;
      this.lastSucceededMs = this.at(line);
    }
    if ((line.level === 'error' || line.level === 'fatal') && this.errors.length < 20)
      this.errors.push(JSON.stringify(line).slice(0, 400));
  }
}

interface ControllerRun {
  loadMs: number;
  firstStartedMs: number;
  wallMs: number;
  peakRssMB: number;
  sampledPeakRssMB: number;
  rssAtEndMB: number;
  idleCpuPercent: number;
  idleSeconds: number;
  exitCode: number;
  finalPhases: Record<string, number>;
  errors: string[];
}

async function runController(
  opts: BenchOptions,
  root: string,
  specDir: string,
  n: number,
  idleSeconds: number,
): Promise<ControllerRun> {
  const state = join(root, 'state');
  const args = [
    'run',
    specDir,
    '--watch',
    '--max-concurrent',
    String(CONCURRENCY),
    '--state-dir',
    state,
    '--log-level',
    'info',
  ];
  const stderr = join(root, 'controller.err');
  const s: Spawned = spawnTo(cliArgv(opts, args, 'many-tasks'), { stdout: join(root, 'controller.out'), stderr });
  const p = new Progress(stderr, s.startedAt);
  let sampledPeak = 0;
  const sample = () => {
    const m = memoryMB(s.pid);
    if (m && m.rss > sampledPeak) sampledPeak = m.rss;
    p.poll();
  };
  const alive = () => s.child.exitCode === null && s.child.signalCode === null;
  try {
    // Generous: the point is to measure, not to fail; a stuck controller still ends the run.
    const timeoutMs = Math.max(120_000, n * 200);
    await pollUntil('"specs loaded"', () => p.specsLoadedMs !== undefined, { timeoutMs, onTick: sample, alive });
    progress(`[many-tasks] specs loaded after ${p.specsLoadedMs} ms`);
    let reported = 0;
    await pollUntil(`${n} tasks to succeed`, () => p.succeeded >= n, {
      timeoutMs,
      alive,
      onTick: () => {
        sample();
        if (p.succeeded - reported >= n / 5) {
          reported = p.succeeded;
          progress(
            `[many-tasks] ${p.succeeded}/${n} succeeded after ${((performance.now() - s.t0) / 1000).toFixed(1)} s, RSS ${memoryMB(s.pid)?.rss.toFixed(0)} MB`,
          );
        }
      },
    });
    // Idle: every task is done; --watch keeps the controller (and its spec watcher) running.
    await sleep(1000);
    sample();
    const cpu0 = cpuSeconds(s.pid);
    const t0 = performance.now();
    await sleep(idleSeconds * 1000);
    const cpu1 = cpuSeconds(s.pid);
    const window = (performance.now() - t0) / 1000;
    sample();
    const mem = memoryMB(s.pid);
    const exitCode = await stop(s);
    p.poll();
    return {
      loadMs: p.specsLoadedMs ?? NaN,
      firstStartedMs: p.firstStartedMs ?? NaN,
      wallMs: p.lastSucceededMs ?? NaN,
      peakRssMB: Math.max(mem?.hwm ?? 0, sampledPeak),
      sampledPeakRssMB: sampledPeak,
      rssAtEndMB: mem?.rss ?? NaN,
      idleCpuPercent: cpu0 !== undefined && cpu1 !== undefined ? (100 * (cpu1 - cpu0)) / window : NaN,
      idleSeconds: window,
      exitCode,
      finalPhases: Object.fromEntries(p.finalPhases),
      errors: p.errors,
    };
  } finally {
    if (alive()) await stop(s, 5000);
  }
}

/** Load time only: until "specs loaded" and the first episode start, then SIGTERM. */
async function loadOnly(
  opts: BenchOptions,
  root: string,
  specDir: string,
  tag: string,
): Promise<{ loadMs: number; firstStartedMs: number }> {
  const stderr = join(root, `${tag}.err`);
  const args = [
    'run',
    specDir,
    '--watch',
    '--max-concurrent',
    String(CONCURRENCY),
    '--state-dir',
    join(root, `state-${tag}`),
    '--log-level',
    'info',
  ];
  const s = spawnTo(cliArgv(opts, args, `many-tasks-${tag}`), { stdout: join(root, `${tag}.out`), stderr });
  const p = new Progress(stderr, s.startedAt);
  try {
    await pollUntil(`first episode start (${tag})`, () => p.firstStartedMs !== undefined, {
      timeoutMs: 120_000,
      onTick: () => p.poll(),
      alive: () => s.child.exitCode === null,
    });
  } finally {
    await stop(s);
  }
  return { loadMs: p.specsLoadedMs ?? NaN, firstStartedMs: p.firstStartedMs ?? NaN };
}

async function xargsBaseline(root: string, agent: string, n: number, tag: string): Promise<number> {
  const list = join(root, 'xargs-input');
  writeFileSync(list, `${Array.from({ length: n }, (_, i) => taskName(i, n)).join('\n')}\n`);
  const { code, wallMs } = await timed(['/bin/sh', '-c', `xargs -P${CONCURRENCY} -n1 "$0" < "$1"`, agent, list], {
    stdout: join(root, `${tag}.out`),
    stderr: join(root, `${tag}.err`),
  });
  if (code !== 0) throw new Error(`xargs baseline exited ${code}`);
  return wallMs;
}

export async function benchManyTasks(opts: BenchOptions): Promise<PartResult> {
  const started = performance.now();
  const n = opts.size ?? (opts.quick ? 1000 : 10_000);
  const idleSeconds = opts.idleSeconds ?? (opts.quick ? 3 : 10);
  const root = tempDir('many-tasks');
  try {
    const agent = join(root, 'agent.sh');
    writeFileSync(agent, INSTANT_AGENT);
    chmodSync(agent, 0o755);
    progress(`[many-tasks] ${n} tasks, --max-concurrent ${CONCURRENCY}, in ${root}`);
    const oneDir = join(root, 'one');
    writeSpecs(oneDir, 1, agent, false);
    const specDir = join(root, 'specs');
    writeSpecs(specDir, n, agent, false);
    const multiDir = join(root, 'multi');
    writeSpecs(multiDir, n, agent, true);

    // The CLI's own start-up, to tell it apart from the cost per spec.
    const one = await loadOnly(opts, root, oneDir, 'one-spec');
    const xargsBefore = await xargsBaseline(root, agent, n, 'xargs-before');
    progress(
      `[many-tasks] xargs -P${CONCURRENCY}: ${(xargsBefore / 1000).toFixed(2)} s; CLI start-up with one spec: ${one.loadMs} ms`,
    );
    const run = await runController(opts, root, specDir, n, idleSeconds);
    const xargsAfter = await xargsBaseline(root, agent, n, 'xargs-after');
    progress(
      `[many-tasks] episodic: ${(run.wallMs / 1000).toFixed(2)} s; xargs again: ${(xargsAfter / 1000).toFixed(2)} s`,
    );
    const multi = await loadOnly(opts, root, multiDir, 'multi-doc');
    const xargsMs = (xargsBefore + xargsAfter) / 2;
    const succeeded = run.finalPhases.Succeeded ?? 0;
    if (succeeded !== n)
      progress(
        `[many-tasks] WARNING: final status says ${succeeded}/${n} Succeeded: ${JSON.stringify(run.finalPhases)}`,
      );
    return {
      part: 'b',
      title: `${n} tasks, instant agent, --max-concurrent ${CONCURRENCY}`,
      seconds: round((performance.now() - started) / 1000, 1),
      metrics: [
        metric('loadSeconds', `(1) start → ${n} specs loaded (one file each)`, run.loadMs / 1000, 's', {
          op: '<',
          value: 2,
        }),
        metric('queuedSeconds', '(1) start → all queued (first episode started)', run.firstStartedMs / 1000, 's', {
          op: '<',
          value: 2,
        }),
        metric('startupSeconds', '    of which CLI start-up (1 spec)', one.loadMs / 1000, 's'),
        metric(
          'multiDocLoadSeconds',
          `    same specs as ${DOCS_PER_FILE}-document files: loaded`,
          multi.loadMs / 1000,
          's',
        ),
        metric(
          'multiDocQueuedSeconds',
          '    same specs as multi-document files: queued',
          multi.firstStartedMs / 1000,
          's',
        ),
        metric('wallSeconds', `(2) episodic wall time, ${n} tasks`, run.wallMs / 1000, 's'),
        metric('xargsSeconds', `(2) xargs -P${CONCURRENCY}, same agent ${n} times`, xargsMs / 1000, 's'),
        metric('wallRatio', '(2) ratio episodic / xargs', run.wallMs / xargsMs, 'x'),
        metric('perTaskMs', '    controller time per task (wall / n)', run.wallMs / n, 'ms'),
        metric('peakRssMB', '(3) controller peak RSS (VmHWM)', run.peakRssMB, 'MB', { op: '<', value: 300 }),
        metric('rssAtEndMB', '    RSS when idle at the end', run.rssAtEndMB, 'MB'),
        metric(
          'idleCpuPercent',
          `(4) CPU while idle in --watch (${Math.round(run.idleSeconds)} s)`,
          run.idleCpuPercent,
          '%',
          { op: '≈0', value: 1 },
        ),
      ],
      details: {
        n,
        concurrency: CONCURRENCY,
        run,
        oneSpec: one,
        multiDoc: { docsPerFile: DOCS_PER_FILE, ...multi },
        xargsMs: [xargsBefore, xargsAfter],
      },
    };
  } finally {
    removeDir(root, opts.keep);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runAlone(benchManyTasks, process.argv.slice(2));
