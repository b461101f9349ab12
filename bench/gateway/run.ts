// bench/gateway: what the model gateway adds to a request (issue 29 §5). The same Anthropic SSE answers, short
// (~1 KB) and 1 MiB, straight from a stand-in model server and through the real gateway, with 1 and 200
// streams at once; each process on its own (upstream.ts, serve.ts, this client). Per request: time to first
// body byte and to the end; added latency is gateway minus direct at p50/p99, measured in the same run with
// the two interleaved block by block. The gateway's CPU time and RSS come from its own process. At 200 streams
// back to back the machine is CPU-bound and every request queues behind the others' work: the bench prints
// that floor (queueing.ts) and runs the same 200 streams paced, each pausing between requests so they offer
// the gateway 30 % of a core, which shows what the gateway adds when it is not queueing.
// At one stream the same blocks also go through two floors (plain.ts): a plain Node relay (undici + pipeline,
// nothing else), what any Node HTTP relay pays on this machine, and a raw TCP relay (the bytes alone).
// Usage: node bench/gateway/run.ts [--quick] [--focus] [--cpu-prof DIR] (DIR: the gateway process's V8 CPU
// profile; --focus: only the 1 MiB, 1 stream case, 400 requests a path)
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { pauseForShare, queueing } from './queueing.ts';

const HERE = import.meta.dirname;
const QUICK = process.argv.includes('--quick');
const PROFILE_DIR = process.argv.includes('--cpu-prof')
  ? process.argv[process.argv.indexOf('--cpu-prof') + 1]
  : undefined;
const GOALS = { p50AddedMs: 1, p99AddedMs: 5, ttfbAddedMs: 1 };
const FOCUS = process.argv.includes('--focus');
const CORES = availableParallelism();
/** The share of one core the paced streams offer the gateway. */
const PACED_SHARE = 0.3;
const BODY = JSON.stringify({ model: 'claude-bench', stream: true, max_tokens: 1024, messages: [] });

interface Stats {
  cpu: { user: number; system: number };
  rss: number;
  maxRss: number;
}
interface Sample {
  ttfb: number;
  total: number;
}
interface Case {
  size: 'short' | 'big';
  concurrency: number;
  /** Requests per block; blocks alternate direct and gateway. */
  perBlock: number;
  blocks: number;
  /** Each stream pauses between requests (pauseForShare, from the CPU measured back to back). */
  paced?: boolean;
}

const ALL_CASES: Case[] = [
  { size: 'short', concurrency: 1, perBlock: QUICK ? 100 : 250, blocks: 4 },
  { size: 'big', concurrency: 1, perBlock: QUICK ? 10 : 25, blocks: 4 },
  { size: 'short', concurrency: 200, perBlock: QUICK ? 400 : 2000, blocks: 4 },
  { size: 'big', concurrency: 200, perBlock: QUICK ? 200 : 400, blocks: 4 },
  { size: 'short', concurrency: 200, perBlock: 400, blocks: QUICK ? 2 : 4, paced: true },
  { size: 'big', concurrency: 200, perBlock: 200, blocks: 2, paced: true },
];
const CASES: Case[] = FOCUS ? [{ size: 'big', concurrency: 1, perBlock: 100, blocks: 4 }] : ALL_CASES;

function child(
  script: string,
  args: string[],
  execArgv: string[] = [],
): Promise<{ proc: ChildProcess; first: Record<string, unknown> }> {
  const proc = fork(join(HERE, script), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
  return once(proc, 'message').then(([first]) => ({ proc, first: first as Record<string, unknown> }));
}

async function stats(proc: ChildProcess): Promise<Stats> {
  proc.send('stats');
  const [m] = (await once(proc, 'message')) as [{ stats: Stats }];
  return m.stats;
}

const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 60_000, pipelining: 1 });

async function one(url: string, token: string): Promise<Sample> {
  const t0 = performance.now();
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
    body: BODY,
    dispatcher,
  });
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${await res.body.text()}`);
  let ttfb = -1;
  for await (const _ of res.body) if (ttfb < 0) ttfb = performance.now() - t0;
  return { ttfb, total: performance.now() - t0 };
}

async function block(url: string, token: string, n: number, concurrency: number, pauseMs = 0): Promise<Sample[]> {
  const out: Sample[] = [];
  let next = 0;
  // Paced streams start spread over one pause and pause 0.5-1.5 times it: no stream lines up with another.
  const worker = async () => {
    if (pauseMs > 0) await sleep(Math.random() * pauseMs);
    while (next < n) {
      next++;
      out.push(await one(url, token));
      if (pauseMs > 0 && next < n) await sleep(pauseMs * (0.5 + Math.random()));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return out;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const ms = (x: number) => `${x.toFixed(2)} ms`;

/** One path's samples and the CPU its relay process spent on them (per request) and its share of the time. */
interface Measured {
  samples: Sample[];
  cpuUs: number;
  busy: number;
}

async function measuredBlock(
  proc: ChildProcess,
  url: string,
  token: string,
  c: Case,
  pauseMs: number,
  into: Measured,
): Promise<void> {
  const before = await stats(proc);
  const t0 = performance.now();
  const got = await block(url, token, c.perBlock, c.concurrency, pauseMs);
  const wall = performance.now() - t0;
  const after = await stats(proc);
  const cpu = after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system;
  // Running sums until the case ends: cpuUs holds µs in total, busy the wall ms (finish() turns them into rates).
  into.samples.push(...got);
  into.cpuUs += cpu;
  into.busy += wall;
}

function finish(m: Measured): Measured {
  return { samples: m.samples, cpuUs: m.cpuUs / m.samples.length, busy: m.cpuUs / 1000 / m.busy };
}

const tot = (xs: Sample[]) => xs.map((x) => x.total);
const fb = (xs: Sample[]) => xs.map((x) => x.ttfb);

function row(name: string, d: Sample[], g: Measured, floor: string, rss: string): string[] {
  const added = (p: number) => pct(tot(g.samples), p) - pct(tot(d), p);
  const ratio = (p: number) => (pct(tot(g.samples), p) / pct(tot(d), p)).toFixed(2);
  const ttfbAdded = pct(fb(g.samples), 50) - pct(fb(d), 50);
  return [
    name,
    String(g.samples.length),
    `${ms(pct(tot(d), 50))} / ${ms(pct(tot(d), 99))}`,
    `${ms(pct(tot(g.samples), 50))} / ${ms(pct(tot(g.samples), 99))}`,
    `${ms(added(50))} (${ratio(50)}x)`,
    `${ms(added(99))} (${ratio(99)}x)`,
    `${ms(pct(fb(d), 50))} → ${ms(pct(fb(g.samples), 50))} (${ms(ttfbAdded)})`,
    `${g.cpuUs.toFixed(0)} µs, ${(g.busy * 100).toFixed(0)} %`,
    floor,
    rss,
  ];
}

const rssOf = (s: Stats) => `${(s.rss / 1024 / 1024).toFixed(0)} MiB (max ${(s.maxRss / 1024).toFixed(0)} MiB)`;

/** A path through a relay process: the gateway, or a floor beside it (plain.ts). */
interface Path {
  label: string;
  proc: ChildProcess;
  url: (size: Case['size']) => string;
  token: string;
}

/**
 * A case's blocks: straight to the server, then through each path, the paths taking turns going first (none
 * always follows another). The direct samples and, per path, what it measured.
 */
async function measureCase(c: Case, direct: string, paths: Path[], pauseMs: number) {
  // Warm every path: connections open, JIT warm (a paced case follows its back-to-back one, warm already).
  if (!c.paced)
    for (const [url, t] of [[direct, 'x'], ...paths.map((p) => [p.url(c.size), p.token])] as const)
      await block(url, t, Math.min(c.perBlock, 200), c.concurrency);
  const d: Sample[] = [];
  const sums: Measured[] = paths.map(() => ({ samples: [], cpuUs: 0, busy: 0 }));
  for (let b = 0; b < c.blocks; b++) {
    d.push(...(await block(direct, 'x', c.perBlock, c.concurrency, pauseMs)));
    for (let k = 0; k < paths.length; k++) {
      const i = (b + k) % paths.length;
      const p = paths[i] as Path;
      await measuredBlock(p.proc, p.url(c.size), p.token, c, pauseMs, sums[i] as Measured);
    }
  }
  return { d, measured: sums.map(finish) };
}

async function main(): Promise<void> {
  const up = await child('upstream.ts', []);
  const upstream = up.first.url as string;
  const profile = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const gw = await child('serve.ts', [upstream], profile);
  const grants = gw.first.grants as Record<string, { url: string; token: string }>;
  const gateway: Path = {
    label: 'gateway',
    proc: gw.proc,
    url: (size) => `${(grants[size] as { url: string }).url}/v1/messages`,
    token: '',
  };
  const floors: Path[] = [];
  for (const [label, mode] of [
    ['plain Node relay (undici + pipeline)', 'http'],
    ['raw TCP relay (net pipe)', 'tcp'],
  ] as const) {
    const f = await child('plain.ts', [upstream, mode]);
    floors.push({ label, proc: f.proc, url: (size) => `${f.first.url}/${size}/v1/messages`, token: 'x' });
  }
  const rows: string[][] = [];
  const verdicts: string[] = [];
  /** The gateway CPU per request measured back to back, by size and streams: the paced cases' pause. */
  const cpuBackToBack = new Map<string, number>();
  const load0 = loadavg();
  try {
    for (const c of CASES) {
      const direct = `${upstream}/${c.size}/v1/messages`;
      const pauseMs = c.paced
        ? pauseForShare(c.concurrency, cpuBackToBack.get(`${c.size}/${c.concurrency}`) ?? 0, PACED_SHARE)
        : 0;
      // The floors only at one stream: there they show what is left of the gateway's added time.
      const paths = [{ ...gateway, token: (grants[c.size] as { token: string }).token }];
      if (c.concurrency === 1) paths.push(...floors);
      const { d, measured } = await measureCase(c, direct, paths, pauseMs);
      const g = measured[0] as Measured;
      const added50 = pct(tot(g.samples), 50) - pct(tot(d), 50);
      const added99 = pct(tot(g.samples), 99) - pct(tot(d), 99);
      const ttfbAdded = pct(fb(g.samples), 50) - pct(fb(d), 50);
      if (!c.paced) cpuBackToBack.set(`${c.size}/${c.concurrency}`, g.cpuUs);
      const streams = `${c.concurrency} stream${c.concurrency > 1 ? 's' : ''}`;
      const pace = c.paced
        ? ` paced (${(PACED_SHARE * 100).toFixed(0)} % of a core, ~${pauseMs.toFixed(0)} ms pauses)`
        : '';
      const name = `${c.size === 'short' ? 'short (~1 KB)' : '1 MiB'}, ${streams}${pace}`;
      const q = queueing(c.concurrency, g.cpuUs, CORES, GOALS.p50AddedMs);
      const floor = c.paced || c.concurrency === 1 ? '—' : ms(q.floorMs);
      rows.push(row(name, d, g, floor, rssOf(await stats(gw.proc))));
      for (let i = 1; i < paths.length; i++) {
        const p = paths[i] as Path;
        rows.push(row(`${name}: ${p.label}`, d, measured[i] as Measured, '—', rssOf(await stats(p.proc))));
      }
      const ok = (v: number, goal: number) => (v < goal ? 'met' : 'NOT met');
      verdicts.push(
        `${name}: p50 added ${ms(added50)} (goal < ${GOALS.p50AddedMs} ms: ${ok(added50, GOALS.p50AddedMs)}), p99 added ${ms(added99)} (goal < ${GOALS.p99AddedMs} ms: ${ok(added99, GOALS.p99AddedMs)}), TTFB added ${ms(ttfbAdded)} (goal within ${GOALS.ttfbAddedMs} ms: ${ok(Math.abs(ttfbAdded), GOALS.ttfbAddedMs)})`,
      );
      if (c.concurrency > 1 && !c.paced)
        verdicts.push(
          `  queueing: ${c.concurrency} × ${g.cpuUs.toFixed(0)} µs / ${CORES} cores = ${ms(q.floorMs)} (${((q.floorMs / added50) * 100).toFixed(0)} % of the p50 added); a p50 added < ${GOALS.p50AddedMs} ms at ${c.concurrency} streams back to back needs ≤ ${q.neededUs.toFixed(0)} µs of gateway CPU a request: ${q.reachable ? 'reachable' : 'out of reach on this machine'}`,
        );
    }
  } finally {
    gw.proc.disconnect();
    for (const f of floors) f.proc.disconnect();
    up.proc.disconnect();
    await dispatcher.close();
  }
  const head = [
    'case',
    'requests',
    'direct p50 / p99',
    'gateway p50 / p99',
    'p50 added',
    'p99 added',
    'TTFB p50 direct → gateway',
    'gateway CPU per request, busy',
    'queueing floor',
    'gateway RSS',
  ];
  const load1 = loadavg();
  console.log(
    `${CORES} cores; load average ${load0.map((l) => l.toFixed(2)).join(' ')} at the start, ${load1.map((l) => l.toFixed(2)).join(' ')} at the end\n`,
  );
  console.log(`| ${head.join(' | ')} |\n| ${head.map(() => '---').join(' | ')} |`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  console.log('');
  for (const v of verdicts) console.log(v);
}

await main();
