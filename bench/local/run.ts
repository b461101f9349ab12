// Local-mode benchmarks: runs every part, prints a summary table and writes results/latest.json.
//
//   node bench/local/run.ts [--quick] [--only a,b,c,d,s] [--reps N] [--cli PATH] [--cpu-prof DIR] [--keep]
//
// Parts (each also runnable alone):
//   a  episodes.ts        N episodes of one task vs a bash while loop         (node bench/local/episodes.ts)
//   b  many-tasks.ts      10,000 tasks: load time, wall vs xargs, RSS, idle   (node bench/local/many-tasks.ts)
//   c  queue-pressure.ts  CPU per episode with 10,000 tasks waiting vs 32     (node bench/local/queue-pressure.ts)
//   d  concurrent.ts      500 long episodes at once: controller CPU and RSS   (node bench/local/concurrent.ts)
//   s  spawn-latency.ts   time to start a process at a small and a large heap (node bench/local/spawn-latency.ts)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { benchConcurrent } from './concurrent.ts';
import { benchEpisodes } from './episodes.ts';
import type { BenchOptions, PartResult } from './lib.ts';
import { BENCH_DIR, hostInfo, parseOptions, progress, REPO, summaryTable } from './lib.ts';
import { benchManyTasks } from './many-tasks.ts';
import { benchQueuePressure } from './queue-pressure.ts';
import { benchSpawnLatency } from './spawn-latency.ts';

const PARTS: Record<string, (opts: BenchOptions) => Promise<PartResult>> = {
  a: benchEpisodes,
  b: benchManyTasks,
  c: benchQueuePressure,
  d: benchConcurrent,
  s: benchSpawnLatency,
};

const opts = parseOptions(process.argv.slice(2));
const selected = opts.only ?? Object.keys(PARTS);
for (const p of selected)
  if (!PARTS[p]) throw new Error(`--only: unknown part ${p} (parts: ${Object.keys(PARTS).join(', ')})`);
if (opts.size !== undefined && selected.length > 1)
  throw new Error('--size applies to one part: combine it with --only');

const startedAt = new Date();
const t0 = performance.now();
const host = hostInfo();
progress(
  `episodic local benchmarks${opts.quick ? ' (quick)' : ''}: parts ${selected.join(', ')}; ${host.cpus} CPUs, node ${host.node}, CLI ${relative(REPO, opts.cli)}`,
);
const results: PartResult[] = [];
const failures: Array<{ part: string; error: string }> = [];
for (const p of selected) {
  try {
    results.push(await PARTS[p](opts));
  } catch (err) {
    // One broken part must not hide the others' figures.
    const error = err instanceof Error ? (err.stack ?? err.message) : String(err);
    failures.push({ part: p, error });
    progress(`[${p}] FAILED: ${error}`);
  }
}
const seconds = (performance.now() - t0) / 1000;

const report = {
  startedAt: startedAt.toISOString(),
  seconds: Math.round(seconds),
  quick: opts.quick,
  cli: relative(REPO, opts.cli),
  host,
  parts: results,
  failures,
};
const dir = join(BENCH_DIR, 'results');
mkdirSync(dir, { recursive: true });
const file = join(dir, 'latest.json');
writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);

console.log('');
for (const r of results) console.log(`(${r.part}) ${r.title}: ${r.seconds} s`);
console.log('');
console.log(summaryTable(results));
console.log('');
console.log(`total ${Math.round(seconds)} s; results in ${relative(process.cwd(), file) || file}`);
if (failures.length > 0) {
  console.log(`FAILED parts: ${failures.map((f) => f.part).join(', ')}`);
  process.exitCode = 1;
}
