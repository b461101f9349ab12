// How long starting a process takes the controller's thread at a small and at a large heap. Node's spawn
// copies the calling process's page tables (fork), so the cost grows with its resident memory; this prints
// the time of the spawn call itself and until a trivial child (/bin/true) has exited, for execa with the
// options process-episode.ts uses and for plain child_process.spawn.
//
//   node bench/local/spawn-latency.ts [--quick] [--large-mb N]
import { spawn } from 'node:child_process';
import { execa } from 'execa';
import type { BenchOptions, PartResult } from './lib.ts';
import { median, metric, progress, round, runAlone } from './lib.ts';

const TRUE = '/bin/true';

async function once(kind: 'execa' | 'spawn'): Promise<{ callMs: number; exitMs: number }> {
  const t0 = performance.now();
  let exited: Promise<unknown>;
  if (kind === 'execa') {
    const child = execa(TRUE, [], {
      detached: true,
      buffer: false,
      reject: false,
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      env: { EPISODIC_PROCESS_TREE: 'bench' },
    });
    exited = child;
  } else {
    const child = spawn(TRUE, [], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, EPISODIC_PROCESS_TREE: 'bench' },
    });
    child.stdout.resume();
    child.stderr.resume();
    exited = new Promise((done) => child.once('close', done));
  }
  const callMs = performance.now() - t0;
  await exited;
  return { callMs, exitMs: performance.now() - t0 };
}

async function measure(kind: 'execa' | 'spawn', n: number): Promise<{ callMs: number; exitMs: number }> {
  const samples: Array<{ callMs: number; exitMs: number }> = [];
  for (let i = 0; i < n + 3; i++) samples.push(await once(kind));
  const kept = samples.slice(3); // the first spawns pay for loading code
  return { callMs: median(kept.map((s) => s.callMs)), exitMs: median(kept.map((s) => s.exitMs)) };
}

function rssMB(): number {
  return process.memoryUsage().rss / 1024 / 1024;
}

/** Grows the JS heap to about `mb` of live, resident objects (what a controller with many tasks holds). */
function growHeap(mb: number): unknown[] {
  const keep: unknown[] = [];
  while (rssMB() < mb) for (let i = 0; i < 100_000; i++) keep.push({ i, s: `task-${i}-${keep.length}`, a: [i] });
  return keep;
}

export async function benchSpawnLatency(opts: BenchOptions & { largeMB?: number }): Promise<PartResult> {
  const started = performance.now();
  const n = opts.quick ? 20 : 100;
  const largeMB = opts.largeMB ?? (opts.quick ? 250 : 400);
  const small = { rss: rssMB(), execa: await measure('execa', n), spawn: await measure('spawn', n) };
  progress(`[spawn] at ${Math.round(small.rss)} MB RSS: execa ${small.execa.callMs.toFixed(2)} ms per call`);
  const heap = growHeap(largeMB);
  const large = { rss: rssMB(), execa: await measure('execa', n), spawn: await measure('spawn', n) };
  progress(`[spawn] at ${Math.round(large.rss)} MB RSS: execa ${large.execa.callMs.toFixed(2)} ms per call`);
  heap.length = 0;
  const label = (rss: number) => `${Math.round(rss)} MB RSS`;
  return {
    part: 's',
    title: `spawn latency at a small and a large heap (${n} spawns each)`,
    seconds: round((performance.now() - started) / 1000, 1),
    metrics: [
      metric('execaCallSmallMs', `execa() call, ${label(small.rss)}`, small.execa.callMs, 'ms'),
      metric('execaExitSmallMs', `  until /bin/true exited, ${label(small.rss)}`, small.execa.exitMs, 'ms'),
      metric('spawnCallSmallMs', `child_process.spawn() call, ${label(small.rss)}`, small.spawn.callMs, 'ms'),
      metric('execaCallLargeMs', `execa() call, ${label(large.rss)}`, large.execa.callMs, 'ms'),
      metric('execaExitLargeMs', `  until /bin/true exited, ${label(large.rss)}`, large.execa.exitMs, 'ms'),
      metric('spawnCallLargeMs', `child_process.spawn() call, ${label(large.rss)}`, large.spawn.callMs, 'ms'),
    ],
    details: { n, small, large },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf('--large-mb');
  const largeMB = i > 0 ? Number(process.argv.splice(i, 2)[1]) : undefined;
  await runAlone((o) => benchSpawnLatency({ ...o, largeMB }), process.argv.slice(2));
}
