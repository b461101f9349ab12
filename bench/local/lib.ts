// Shared helpers of the local-mode benchmarks: options, temp dirs, child processes, /proc sampling, the
// incremental reader of the controller's JSON log, and the result/summary format.
// The machine these run on is assumed to be noisy: every figure is compared with a baseline measured in the
// same run, and nothing here is a pass/fail test.
import { spawn, execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(BENCH_DIR, '../..');
export const DEFAULT_CLI = join(REPO, 'controller/cli/main.ts');
export const NODE = process.execPath;

// --- options ----------------------------------------------------------------------------------------------

export interface BenchOptions {
  /** ~10x smaller sizes, fewer repetitions: a smoke run for CI. */
  quick: boolean;
  /** Repetitions per side where a part alternates runs (default 3, quick 1). */
  reps?: number;
  /** The episodic CLI entry to run (default controller/cli/main.ts from source). */
  cli: string;
  /** Keep the temp directories (spec dirs, state, logs) for inspection. */
  keep: boolean;
  /** Override the size of a part (episodes for `episodes`, tasks for `many-tasks`). */
  size?: number;
  /** Seconds of idle CPU sampling in the many-tasks part. */
  idleSeconds?: number;
  /** Write a V8 CPU profile of the controller into this directory (`node --cpu-prof`). */
  cpuProfDir?: string;
}

export const USAGE = `options:
  --quick            ~10x smaller sizes and 1 repetition (CI smoke run)
  --reps N           repetitions per side where runs alternate (default 3; --quick 1)
  --size N           override the part's size (episodes / tasks)
  --idle-seconds S   idle CPU sampling time in many-tasks (default 10; --quick 3)
  --cli PATH         episodic entry to benchmark (default controller/cli/main.ts; e.g. dist/cli/main.js)
  --cpu-prof DIR     run the controller under node --cpu-prof, profiles into DIR
  --keep             keep the temp directories`;

export function parseOptions(argv: string[]): BenchOptions & { only?: string[] } {
  const opts: BenchOptions & { only?: string[] } = { quick: false, cli: DEFAULT_CLI, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--quick') opts.quick = true;
    else if (a === '--keep') opts.keep = true;
    else if (a === '--reps') opts.reps = positiveInt(a, value());
    else if (a === '--size') opts.size = positiveInt(a, value());
    else if (a === '--idle-seconds') opts.idleSeconds = Number(value());
    else if (a === '--cli') opts.cli = resolve(value());
    else if (a === '--cpu-prof') opts.cpuProfDir = resolve(value());
    else if (a === '--only') opts.only = value().split(',');
    else if (a === '-h' || a === '--help') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown option ${a}\n${USAGE}`);
  }
  if (opts.cli !== DEFAULT_CLI) refuseStaleBuild();
  return opts;
}

/** The launcher and dist/ run the compiled CLI: measuring an old build would report on code that is gone. */
function refuseStaleBuild(): void {
  const built = join(REPO, 'dist/cli/main.js');
  if (!existsSync(built)) throw new Error('--cli: dist/ is not built; run `npm run build` first');
  const builtAt = statSync(built).mtimeMs;
  const newer = readdirSync(join(REPO, 'controller'), { recursive: true, encoding: 'utf8' }).find(
    (f) => /\.(ts|pl)$/.test(f) && statSync(join(REPO, 'controller', f)).mtimeMs > builtAt,
  );
  if (newer) throw new Error(`--cli: controller/${newer} is newer than dist/; run \`npm run build\` first`);
}

function positiveInt(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: expected a positive integer, got ${v}`);
  return n;
}

// --- results ----------------------------------------------------------------------------------------------

export interface Goal {
  op: '<=' | '<' | '>=' | '≈0';
  value: number;
}

export interface Metric {
  id: string;
  label: string;
  value: number;
  unit: string;
  goal?: Goal;
  /** Undefined when the metric has no goal. */
  pass?: boolean;
  note?: string;
}

export interface PartResult {
  part: string;
  title: string;
  seconds: number;
  metrics: Metric[];
  /** Raw samples and settings, for the JSON file. */
  details: Record<string, unknown>;
}

export function metric(id: string, label: string, value: number, unit: string, goal?: Goal, note?: string): Metric {
  let pass: boolean | undefined;
  if (goal) {
    if (goal.op === '<=') pass = value <= goal.value;
    else if (goal.op === '<') pass = value < goal.value;
    else if (goal.op === '>=') pass = value >= goal.value;
    else pass = value <= goal.value; // "≈ 0": at most this much
  }
  return { id, label, value, unit, ...(goal ? { goal, pass } : {}), ...(note ? { note } : {}) };
}

export function formatValue(v: number, unit: string): string {
  if (!Number.isFinite(v)) return String(v);
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return `${v.toFixed(digits)}${unit === 'x' ? 'x' : unit ? ` ${unit}` : ''}`;
}

export function formatGoal(g: Goal | undefined, unit: string): string {
  if (!g) return '';
  if (g.op === '≈0') return `≈ 0 (≤ ${formatValue(g.value, unit)})`;
  return `${g.op} ${formatValue(g.value, unit)}`;
}

export function summaryTable(parts: PartResult[]): string {
  const rows: string[][] = [['part', 'metric', 'measured', 'goal', '']];
  for (const p of parts) {
    for (const m of p.metrics) {
      rows.push([
        p.part,
        m.label,
        formatValue(m.value, m.unit),
        formatGoal(m.goal, m.unit),
        m.pass === undefined ? '' : m.pass ? 'ok' : 'MISSED',
      ]);
    }
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r: string[]) =>
    r
      .map((cell, c) => cell.padEnd(widths[c]))
      .join('  ')
      .trimEnd();
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

// --- statistics -------------------------------------------------------------------------------------------

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

// --- environment ------------------------------------------------------------------------------------------

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `episodic-bench-${prefix}-`));
}

export function removeDir(dir: string, keep: boolean): void {
  if (keep) {
    progress(`  kept ${dir}`);
    return;
  }
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

export function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}

export function hostInfo(): Record<string, unknown> {
  let commit = '';
  let dirty = false;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
    dirty =
      execFileSync('git', ['status', '--porcelain', '--', 'controller'], { cwd: REPO, encoding: 'utf8' }).trim() !== '';
  } catch {
    // not a git checkout: fine
  }
  return {
    node: process.version,
    kernel: release(),
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    loadavg: readFileSafe('/proc/loadavg')?.trim(),
    commit,
    controllerDirty: dirty,
  };
}

function readFileSafe(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

// --- /proc ------------------------------------------------------------------------------------------------

let clockTicks: number | undefined;
/** USER_HZ: the unit of utime/stime in /proc/PID/stat. */
export function clkTck(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** utime + stime of one process, in seconds (its own threads, not its children). */
export function cpuSeconds(pid: number): number | undefined {
  const text = readFileSafe(`/proc/${pid}/stat`);
  if (!text) return undefined;
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state): utime is field 14, stime field 15.
  return (Number(rest[11]) + Number(rest[12])) / clkTck();
}

/** VmRSS and VmHWM (peak RSS) in MB. */
export function memoryMB(pid: number): { rss: number; hwm: number } | undefined {
  const text = readFileSafe(`/proc/${pid}/status`);
  if (!text) return undefined;
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

// --- child processes --------------------------------------------------------------------------------------

export interface Spawned {
  child: ChildProcess;
  pid: number;
  /** Date.now() just before spawning. */
  startedAt: number;
  /** performance.now() just before spawning. */
  t0: number;
  /** Resolves with the exit code (or 128+signal) and the wall time in ms. */
  exited: Promise<{ code: number; wallMs: number }>;
}

/** Spawns argv with stdout/stderr going to files (never through this process: it must not slow the child). */
export function spawnTo(
  argv: string[],
  o: { cwd?: string; stdout: string; stderr: string; env?: NodeJS.ProcessEnv },
): Spawned {
  const out = openSync(o.stdout, 'a');
  const err = openSync(o.stderr, 'a');
  const startedAt = Date.now();
  const t0 = performance.now();
  const child = spawn(argv[0], argv.slice(1), {
    cwd: o.cwd,
    stdio: ['ignore', out, err],
    env: { ...process.env, ...o.env },
  });
  closeSync(out);
  closeSync(err);
  if (child.pid === undefined) throw new Error(`could not start ${argv[0]}`);
  const exited = new Promise<{ code: number; wallMs: number }>((done, fail) => {
    child.once('error', fail);
    child.once('exit', (code, signal) => {
      const wallMs = performance.now() - t0;
      done({ code: code ?? 128 + (signal === 'SIGKILL' ? 9 : signal === 'SIGTERM' ? 15 : 2), wallMs });
    });
  });
  return { child, pid: child.pid, startedAt, t0, exited };
}

/** Runs argv to completion; returns exit code and wall time. */
export async function timed(
  argv: string[],
  o: { cwd?: string; stdout: string; stderr: string; env?: NodeJS.ProcessEnv },
): Promise<{ code: number; wallMs: number }> {
  return spawnTo(argv, o).exited;
}

/** SIGTERM, then SIGKILL after graceMs; resolves with the exit code. Only ever signals the given child. */
export async function stop(s: Spawned, graceMs = 30_000): Promise<number> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return (await s.exited).code;
  s.child.kill('SIGTERM');
  const killer = setTimeout(() => s.child.kill('SIGKILL'), graceMs);
  const { code } = await s.exited;
  clearTimeout(killer);
  return code;
}

/** argv that runs the episodic CLI (optionally under --cpu-prof). */
export function cliArgv(opts: BenchOptions, args: string[], profileName: string): string[] {
  const prof = opts.cpuProfDir
    ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`, `--cpu-prof-name=${profileName}.cpuprofile`]
    : [];
  return [NODE, ...launcherFlags(opts.cli), ...prof, opts.cli, ...args, ...jsonLogs(opts.cli, args)];
}

const knowsLogFormat = new Map<string, boolean>();

/**
 * `run` logs JSON lines for the LogTail only with --log-format json (text is the default off a terminal); a
 * --cli tree from before the flag logs JSON anyway and would refuse it.
 */
function jsonLogs(cli: string, args: string[]): string[] {
  if (args[0] !== 'run' || args.includes('--log-format')) return [];
  let known = knowsLogFormat.get(cli);
  if (known === undefined) {
    const help = execFileSync(NODE, [...launcherFlags(cli), cli, 'run', '--help'], { encoding: 'utf8' });
    known = help.includes('--log-format');
    knowsLogFormat.set(cli, known);
  }
  return known ? ['--log-format', 'json'] : [];
}

/** The node flags a launcher asks for in its shebang (`#!/usr/bin/env -S node FLAGS`), as it runs when installed. */
function launcherFlags(entry: string): string[] {
  const first = readFileSync(entry, 'utf8').split('\n', 1)[0];
  const m = /^#!\S*env -S node\s+(.*)$/.exec(first);
  return m ? m[1].trim().split(/\s+/) : [];
}

// --- the controller's log ---------------------------------------------------------------------------------

export interface LogLine {
  level?: string;
  time?: string;
  msg?: string;
  event?: string;
  [field: string]: unknown;
}

/** Reads a growing file of JSON lines incrementally (only the new bytes on each poll). */
export class LogTail {
  private readonly path: string;
  private offset = 0;
  private partial = '';

  constructor(path: string) {
    this.path = path;
  }

  /** New complete lines since the last call; lines that are not JSON come back as { msg: line }. */
  poll(): LogLine[] {
    if (!existsSync(this.path)) return [];
    const fd = openSync(this.path, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size <= this.offset) return [];
      const buf = Buffer.alloc(size - this.offset);
      const n = readSync(fd, buf, 0, buf.length, this.offset);
      this.offset += n;
      const text = this.partial + buf.toString('utf8', 0, n);
      const lines = text.split('\n');
      this.partial = lines.pop() ?? '';
      return lines.filter((l) => l.trim() !== '').map(parseLogLine);
    } finally {
      closeSync(fd);
    }
  }
}

export function parseLogLine(line: string): LogLine {
  try {
    const v: unknown = JSON.parse(line);
    return v && typeof v === 'object' ? (v as LogLine) : { msg: line };
  } catch {
    return { msg: line };
  }
}

export async function pollUntil(
  what: string,
  probe: () => boolean,
  o: { timeoutMs: number; intervalMs?: number; onTick?: () => void; alive?: () => boolean },
): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  for (;;) {
    o.onTick?.();
    if (probe()) return;
    if (o.alive && !o.alive()) throw new Error(`process exited while waiting for ${what}`);
    if (Date.now() > deadline)
      throw new Error(`timed out after ${Math.round(o.timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(o.intervalMs ?? 100);
  }
}

/** Runs a part on its own: `node bench/local/PART.ts [options]`. */
export async function runAlone(part: (opts: BenchOptions) => Promise<PartResult>, argv: string[]): Promise<void> {
  const opts = parseOptions(argv);
  const result = await part(opts);
  console.log(summaryTable([result]));
}

/** One AgentTask document running `agent` (an executable path) with a text-output, templated prompt. */
export function benchTaskDoc(
  name: string,
  agent: string,
  opts: { maxEpisodes: number; onExitZero?: boolean; episodeTimeoutSeconds?: number },
): string {
  const completion = opts.onExitZero ? '  completion:\n    onExitZero: true\n' : '';
  const timeout = opts.episodeTimeoutSeconds ? `    episodeTimeoutSeconds: ${opts.episodeTimeoutSeconds}\n` : '';
  return `apiVersion: episodic.dev/v1alpha1
kind: AgentTask
metadata:
  name: ${name}
spec:
  prompt: "Task {{task}}, episode {{episode}}."
  agent:
    command: [${JSON.stringify(agent)}]
    output: text
${completion}  limits:
    maxEpisodes: ${opts.maxEpisodes}
${timeout}`;
}
