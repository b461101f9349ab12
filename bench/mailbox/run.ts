// Latency from a message landing in a task's mailbox to the task's next episode starting, for a task with
// wake: onMessage, locally and on the shared apiserver: this tree (mailbox events) against the baseline
// tree at the commit before them (a waiting task polled its mailbox every 2 s), both measured in this run.
// Sends are spread uniformly over a poll period, so the baseline's expected wait is about 1 s plus its pass.
//
//   node bench/mailbox/run.ts [--quick] [--rounds N] [--baseline REF] [--only local|cluster] [--keep]
import { existsSync, rmSync } from 'node:fs';
import { ensureCluster, kubeconfigPath } from '../../test/support/cluster.ts';
import { REPO } from '../local/lib.ts';
import { measureCluster } from './cluster.ts';
import { measureLocal } from './local.ts';
import { cliOf, defaultBaselineRef, extractTree } from './trees.ts';

interface Options {
  rounds: number;
  baseline?: string;
  only?: 'local' | 'cluster';
  keep: boolean;
}

function parse(argv: string[]): Options {
  const opts: Options = { rounds: 10, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') opts.rounds = 3;
    else if (a === '--rounds') opts.rounds = Number(argv[++i]);
    else if (a === '--baseline') opts.baseline = argv[++i];
    else if (a === '--only') opts.only = argv[++i] as Options['only'];
    else if (a === '--keep') opts.keep = true;
    else throw new Error(`unknown option ${a}`);
  }
  if (!Number.isInteger(opts.rounds) || opts.rounds < 1) throw new Error('--rounds: a positive integer');
  return opts;
}

function stats(samples: number[]): { median: number; mean: number; p90: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  const mean = sorted.reduce((n, v) => n + v, 0) / sorted.length;
  return { median: at(0.5), mean, p90: at(0.9), max: sorted[sorted.length - 1] as number };
}

function report(mode: string, baseline: number[], events: number[], commit: string): Record<string, unknown> {
  const b = stats(baseline);
  const e = stats(events);
  const row = (name: string, s: typeof b) =>
    `  ${name.padEnd(28)} median ${s.median.toFixed(0).padStart(5)} ms  mean ${s.mean.toFixed(0).padStart(5)} ms  p90 ${s.p90.toFixed(0).padStart(5)} ms  max ${s.max.toFixed(0).padStart(5)} ms`;
  console.log(`${mode}: send → next episode started (${events.length} rounds each)`);
  console.log(row(`baseline, 2 s poll (${commit})`, b));
  console.log(row('events (this tree)', e));
  console.log(
    `  ratio baseline/events: mean ${(b.mean / e.mean).toFixed(1)}x, median ${(b.median / e.median).toFixed(1)}x`,
  );
  return { mode, baseline: { ...b, samples: baseline }, events: { ...e, samples: events }, commit };
}

const opts = parse(process.argv.slice(2));
const ref = opts.baseline ?? defaultBaselineRef();
const tree = extractTree(ref);
const results: Record<string, unknown>[] = [];
try {
  if (opts.only !== 'cluster') {
    const baseline = await measureLocal(cliOf(tree.root), opts.rounds, opts.keep);
    const events = await measureLocal(cliOf(REPO), opts.rounds, opts.keep);
    results.push(report('local, until the start is on record', baseline.recorded, events.recorded, tree.commit));
    results.push(report('local, until the agent runs', baseline.agent, events.agent, tree.commit));
  }
  if (opts.only !== 'local') {
    if (!existsSync(kubeconfigPath)) console.log('cluster: skipped (no .cluster/kubeconfig; npm run cluster:up)');
    else {
      const cluster = await ensureCluster();
      const baseline = await measureCluster(cluster, cliOf(tree.root), opts.rounds);
      const events = await measureCluster(cluster, cliOf(REPO), opts.rounds);
      results.push(report('cluster, until the pod is announced', baseline, events, tree.commit));
    }
  }
  console.log(JSON.stringify({ bench: 'mailbox', rounds: opts.rounds, results }));
} finally {
  if (!opts.keep) rmSync(tree.root, { recursive: true, force: true });
}
