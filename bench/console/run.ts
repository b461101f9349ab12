// bench/console: the web console over 10,000 local tasks. Prints the time to the fleet table's first render in
// headless Chromium, the delay from a status write to the open page showing it under 100 changes/s (p50, p99),
// and the console process's CPU at that rate with no page open and with one. Status files are written the
// way the controller writes them (temp file + rename); no agent runs. Usage: node bench/console/run.ts
// [--tasks N] [--rate N] [--seconds N] [--baseline CHECKOUT] [--keep]
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { StoredStatus } from '../../controller/sinks/local/file-status.ts';
import { DEFAULT_CLI, NODE } from '../local/lib.ts';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const TASKS = arg('tasks', 10_000);
const RATE = arg('rate', 100);
const SECONDS = arg('seconds', 10);
const PHASES = [
  'Running',
  'Waiting',
  'Succeeded',
  'Succeeded',
  'Succeeded',
  'Pending',
  'NeedsReview',
  'Failed',
] as const;
const PER_FILE = 400; // spec files stay under the 1 MiB a spec file may have

const dir = mkdtempSync(join(tmpdir(), 'episodic-bench-console-'));
const name = (i: number) => `task-${String(i).padStart(5, '0')}`;

function writeSpecs(): void {
  for (let f = 0; f * PER_FILE < TASKS; f++) {
    const docs = [];
    for (let i = f * PER_FILE; i < Math.min(TASKS, (f + 1) * PER_FILE); i++)
      docs.push(
        JSON.stringify({
          apiVersion: 'episodic.dev/v1alpha1',
          kind: 'AgentTask',
          metadata: { name: name(i), labels: { shard: String(i % 10) } },
          spec: {
            prompt: 'p',
            agent: { command: ['true'] },
            workspace: `ws/${name(i)}`,
            limits: { maxEpisodes: 20, maxCostUSD: 5 },
          },
        }),
      );
    writeFileSync(join(dir, `tasks-${f}.yaml`), docs.join('\n---\n'));
  }
}

function writeStatus(i: number, message?: string): void {
  const status = emptyStatus();
  status.phase = PHASES[i % PHASES.length];
  status.episodes = i % 20;
  status.costUSD = (i % 500) / 100;
  status.message = message ?? `episode ${i % 20} finished`;
  const record: StoredStatus = { namespace: 'default', name: name(i), generation: 1, specHash: 'bench', status };
  const path = join(dir, '.episodic/status/default', `${name(i)}.json`);
  writeFileSync(`${path}.tmp`, JSON.stringify(record));
  renameSync(`${path}.tmp`, path);
}

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100 a second)
}

/** Writes RATE status changes a second for SECONDS to the tasks shown first (NeedsReview); returns write times. */
async function changes(visible: number[], tag: string): Promise<Map<string, number>> {
  const written = new Map<string, number>();
  const start = Date.now();
  for (let n = 0; n < RATE * SECONDS; n++) {
    const due = start + (n * 1000) / RATE;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    const id = `${tag}-${n}`;
    writeStatus(visible[n % visible.length] as number, `bench ${id} end`);
    written.set(id, Date.now());
  }
  return written;
}

async function measureCpu(pid: number, tag: string, visible: number[]) {
  const before = cpuTicks(pid);
  const t0 = Date.now();
  const written = await changes(visible, tag);
  await new Promise((r) => setTimeout(r, 500)); // the last coalesced event goes out
  const percent = ((cpuTicks(pid) - before) / 100 / ((Date.now() - t0) / 1000)) * 100;
  return { percent, written };
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** One console process (`cli`) over the same state dir: first render, status → page delays, CPU. */
async function measure(cli: string, visible: number[]) {
  const server = spawn(NODE, [cli, 'console', dir, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve) => {
    let out = '';
    server.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /at (http:\/\/\S+?)\/?$/m.exec(out);
      if (m) resolve(m[1] as string);
    });
  });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
  try {
    const idle = await measureCpu(server.pid as number, 'idle', visible);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    // Noted by the page itself when the first row is added: a poll from outside runs only when the page's
    // thread is free, so it would count the time the page spends on what comes after (the whole list).
    await page.addInitScript(() => {
      const w = window as unknown as { __firstRow?: number };
      new MutationObserver((_m, observer) => {
        if (!document.querySelector('tr[data-key]')) return;
        w.__firstRow = performance.now();
        observer.disconnect();
      }).observe(document, { childList: true, subtree: true });
    });
    await page.goto(`${url}/`);
    const firstRender = await page.waitForFunction(
      () => (window as unknown as { __firstRow?: number }).__firstRow ?? 0,
      undefined,
      { timeout: 60_000, polling: 10 },
    );
    const firstRenderMs = (await firstRender.jsonValue()) as number;
    const timings = await page.evaluate(() =>
      performance
        .getEntriesByType('resource')
        .map((e) => {
          const r = e as PerformanceResourceTiming;
          return `${new URL(r.name).pathname}${new URL(r.name).search} ${r.startTime.toFixed(0)}→${r.responseEnd.toFixed(0)} ms`;
        })
        .join(', '),
    );
    // The whole list in before the changes start (the first page may come alone first).
    await page.waitForFunction(() => !document.querySelector('[data-testid=loading-rest]'), undefined, {
      timeout: 60_000,
    });
    await page.evaluate(() => {
      const seen: Record<string, number> = {};
      (window as unknown as { __seen: Record<string, number> }).__seen = seen;
      new MutationObserver(() => {
        for (const m of (document.querySelector('main')?.textContent ?? '').matchAll(/bench (open-\d+) end/g))
          seen[m[1] as string] ??= Date.now();
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    });
    const open = await measureCpu(server.pid as number, 'open', visible);
    const seen = await page.evaluate(() => (window as unknown as { __seen: Record<string, number> }).__seen);
    const delays = [...open.written]
      .filter(([id]) => seen[id] !== undefined)
      .map(([id, at]) => (seen[id] as number) - at)
      .sort((a, b) => a - b);
    return { firstRenderMs, timings, delays, written: open.written.size, idle: idle.percent, open: open.percent };
  } finally {
    await browser.close();
    server.kill('SIGINT');
  }
}

function report(label: string, m: Awaited<ReturnType<typeof measure>>): void {
  console.log(`  ${label}:`);
  console.log(`    fleet table first render: ${m.firstRenderMs.toFixed(0)} ms after navigation (goal < 1000 ms)`);
  console.log(`      requests by then (start→end): ${m.timings}`);
  console.log(
    `    status write → page shows it: p50 ${quantile(m.delays, 0.5)} ms, p99 ${quantile(m.delays, 0.99)} ms (goal < 1000 ms); ${m.delays.length} of ${m.written} changes seen (a change overwritten within the same 100 ms event is never shown)`,
  );
  console.log(
    `    console CPU at ${RATE} changes/s: ${m.idle.toFixed(1)}% of a core with no page open, ${m.open.toFixed(1)}% with one (extra ${(m.open - m.idle).toFixed(1)}%; goal < 5%)`,
  );
}

/** `--baseline DIR`: a checkout of another commit (its node_modules linked), measured first over the same tasks. */
function baselineCli(): string | undefined {
  const i = process.argv.indexOf('--baseline');
  return i >= 0 ? join(process.argv[i + 1] as string, 'controller/cli/main.ts') : undefined;
}

async function main(): Promise<void> {
  mkdirSync(join(dir, '.episodic/status/default'), { recursive: true });
  writeSpecs();
  const visible = Array.from({ length: TASKS }, (_, i) => i)
    .filter((i) => PHASES[i % PHASES.length] === 'NeedsReview')
    .slice(0, 100);
  const baseline = baselineCli();
  try {
    const runs: Array<[string, string]> = baseline
      ? [
          ['baseline', baseline],
          ['this tree', DEFAULT_CLI],
        ]
      : [];
    if (!baseline) runs.push(['this tree', DEFAULT_CLI]);
    const results: Array<[string, Awaited<ReturnType<typeof measure>>]> = [];
    for (const [label, cli] of runs) {
      for (let i = 0; i < TASKS; i++) writeStatus(i); // each run starts from the same statuses
      results.push([`${label} (${cli})`, await measure(cli, visible)]);
    }
    console.log(`bench/console: ${TASKS} tasks, ${RATE} status changes/s for ${SECONDS} s`);
    for (const [label, m] of results) report(label, m);
    const [before, after] = results.map(([, m]) => m);
    if (before && after)
      console.log(
        `  this tree / baseline: first render ${(after.firstRenderMs / before.firstRenderMs).toFixed(2)}, p99 ${(quantile(after.delays, 0.99) / quantile(before.delays, 0.99)).toFixed(2)}`,
      );
  } finally {
    if (!process.argv.includes('--keep')) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
