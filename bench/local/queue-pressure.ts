// Part (c): cost of an episode while many tasks wait for a slot. Real agents run for minutes, so with 10,000
// tasks and --max-concurrent 16 almost every task sits in "Queued" most of the time. The controller's CPU time
// per finished episode must then not depend on how many tasks wait. Measured as controller CPU (utime+stime)
// per episode over a window of episodes with a ~1.5 s agent that never claims completion (every task goes on
// and on), for many tasks against a small baseline of 2x the slot count, in the same run. (Before this benchmark existed, every episode end re-reconciled every queued
// task: O(waiting tasks) per episode, O(n²) per run.)
//
//   node bench/local/queue-pressure.ts [--quick] [--size TASKS] [--cli PATH] [--keep]
import { chmodSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchOptions, PartResult } from './lib.ts';
import {
  benchTaskDoc,
  cliArgv,
  cpuSeconds,
  LogTail,
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

const CONCURRENCY = 16;
/** Mean episode length of the stand-in agent. */
const AGENT_SECONDS = 1.45;
/**
 * Sleeps 1.0–1.9 s depending on the last digit of its task's name, so slots free up one at a time as they
 * would with real agents, not all 16 in lockstep (which would let the work queue coalesce the wake-ups).
 */
const AGENT = `#!/bin/sh
d=\${EPISODIC_TASK#"\${EPISODIC_TASK%?}"}
exec sleep "1.$d"
`;

function countFiles(dir: string): number {
  try {
    return readdirSync(dir).length;
  } catch {
    return 0;
  }
}

interface Window {
  tasks: number;
  episodes: number;
  cpuSeconds: number;
  wallSeconds: number;
  cpuMsPerEpisode: number;
}

/** Runs the controller on n tasks; measures its CPU over `episodes` episode ends once every task has a status. */
async function measure(opts: BenchOptions, root: string, agent: string, n: number, episodes: number): Promise<Window> {
  const dir = join(root, `tasks-${n}`);
  const specs = join(dir, 'specs');
  mkdirSync(specs, { recursive: true });
  const width = String(n - 1).length;
  for (let i = 0; i < n; i++) {
    const name = `q${String(i).padStart(width, '0')}`;
    writeFileSync(join(specs, `${name}.yaml`), benchTaskDoc(name, agent, { maxEpisodes: 1000 }));
  }
  const state = join(dir, 'state');
  const stderr = join(dir, 'controller.err');
  const args = [
    'run',
    specs,
    '--watch',
    '--max-concurrent',
    String(CONCURRENCY),
    '--state-dir',
    state,
    '--log-level',
    'info',
  ];
  const s = spawnTo(cliArgv(opts, args, `queue-pressure-${n}`), { stdout: join(dir, 'controller.out'), stderr });
  const tail = new LogTail(stderr);
  let ended = 0;
  let watching = false;
  const poll = () => {
    for (const line of tail.poll()) {
      if ('exitCode' in line)
        ended++; // an episode's end event line
      else if (line.msg === 'watching for spec changes') watching = true;
    }
  };
  const alive = () => s.child.exitCode === null && s.child.signalCode === null;
  const timeoutMs = Math.max(120_000, n * 100);
  try {
    // Every task has been reconciled once (it has a status file) and the spec watcher has finished its first
    // scan of the directory: the start-up burst is over.
    await pollUntil('a status for every task', () => countFiles(join(state, 'status', 'default')) >= n, {
      timeoutMs,
      onTick: poll,
      alive,
      intervalMs: 200,
    });
    await pollUntil('the spec watcher', () => watching, { timeoutMs, onTick: poll, alive, intervalMs: 200 });
    poll();
    const from = ended;
    const cpu0 = cpuSeconds(s.pid) ?? NaN;
    const t0 = performance.now();
    await pollUntil(`${episodes} more episodes`, () => ended - from >= episodes, {
      timeoutMs,
      onTick: poll,
      alive,
      intervalMs: 50,
    });
    const cpu1 = cpuSeconds(s.pid) ?? NaN;
    const done = ended - from;
    const w = {
      tasks: n,
      episodes: done,
      cpuSeconds: cpu1 - cpu0,
      wallSeconds: (performance.now() - t0) / 1000,
      cpuMsPerEpisode: (1000 * (cpu1 - cpu0)) / done,
    };
    progress(
      `[queue-pressure] ${n} tasks: ${done} episodes in ${w.wallSeconds.toFixed(1)} s, controller CPU ${w.cpuSeconds.toFixed(2)} s = ${w.cpuMsPerEpisode.toFixed(1)} ms per episode`,
    );
    return w;
  } finally {
    await stop(s);
  }
}

export async function benchQueuePressure(opts: BenchOptions): Promise<PartResult> {
  const started = performance.now();
  const n = opts.size ?? (opts.quick ? 1000 : 10_000);
  const episodes = CONCURRENCY * (opts.quick ? 3 : 6);
  const root = tempDir('queue-pressure');
  try {
    const agent = join(root, 'agent.sh');
    writeFileSync(agent, AGENT);
    chmodSync(agent, 0o755);
    progress(
      `[queue-pressure] 1.0-1.9 s agent, --max-concurrent ${CONCURRENCY}, ${episodes} episodes measured; ${2 * CONCURRENCY} tasks vs ${n} tasks, in ${root}`,
    );
    const small = await measure(opts, root, agent, 2 * CONCURRENCY, episodes);
    const large = await measure(opts, root, agent, n, episodes);
    return {
      part: 'c',
      title: `controller CPU per episode with ${n} tasks waiting vs ${2 * CONCURRENCY}`,
      seconds: round((performance.now() - started) / 1000, 1),
      metrics: [
        metric(
          'cpuMsPerEpisodeSmall',
          `controller CPU per episode, ${2 * CONCURRENCY} tasks`,
          small.cpuMsPerEpisode,
          'ms',
        ),
        metric('cpuMsPerEpisodeLarge', `controller CPU per episode, ${n} tasks`, large.cpuMsPerEpisode, 'ms'),
        metric(
          'cpuRatio',
          `ratio ${n} / ${2 * CONCURRENCY} tasks (bench's own goal)`,
          large.cpuMsPerEpisode / small.cpuMsPerEpisode,
          'x',
          { op: '<=', value: 1.5 },
        ),
        metric(
          'episodesPerSecondLarge',
          `episodes per second, ${n} tasks (ideal ~${(CONCURRENCY / AGENT_SECONDS).toFixed(0)})`,
          large.episodes / large.wallSeconds,
          '/s',
        ),
      ],
      details: { concurrency: CONCURRENCY, agentSeconds: AGENT_SECONDS, small, large },
    };
  } finally {
    removeDir(root, opts.keep);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runAlone(benchQueuePressure, process.argv.slice(2));
