// Shared set-up of the real-agent suites: the CLIs must be there (CI fails loudly without them), scratch
// directories, and the two ways episodic runs an agent: `episodic run DIR` (local, real processes) and
// `episodic episode -- argv` (the runner inside an episode pod, run here as a plain process).
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EPISODE_CONFIG_ENV, EPISODE_PROMPT_ENV } from '../../controller/api/episode-config.ts';
import type { EpisodeResult } from '../../controller/api/episode-result.ts';
import { decodeTerminationMessage } from '../../controller/api/termination-message.ts';
import { AGENT_CLIS, cacheRoot, installedBin, type CliName } from '../../scripts/agent-clis/clis.ts';
import { cliEntry } from '../support/cli-entry.ts';
import { withJsonLogs } from '../support/local.ts';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A developer's opt-out (CI never sets it); without it a missing CLI fails the suite. */
export const skipRealAgents = process.env.EPISODIC_SKIP_REAL_AGENTS === '1' ? 'EPISODIC_SKIP_REAL_AGENTS=1' : false;

function missing(): string[] {
  return AGENT_CLIS.filter((c) => !installedBin(c)).map((c) => `${c.pkg}@${c.version}`);
}

/**
 * Locally a missing CLI is installed (the set-up's job, as for kube-apiserver); on CI (CI=true) the
 * install step of .ci/run should have done it, so a missing CLI fails with what to run.
 */
export async function ensureClis(): Promise<void> {
  if (missing().length === 0) return;
  const how = `run \`node scripts/agent-clis/install.ts\` (installs into ${cacheRoot()}), or set EPISODIC_SKIP_REAL_AGENTS=1 to skip these tests`;
  if (process.env.CI === 'true') throw new Error(`real agent CLIs not installed: ${missing().join(', ')}; ${how}`);
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [path.join(REPO, 'scripts/agent-clis/install.ts')], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('close', resolve);
  });
  if (code !== 0 || missing().length > 0)
    throw new Error(`could not install the real agent CLIs (${missing().join(', ')}); ${how}`);
}

export function scratchDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), `episodic-real-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A DNS-label task name for a case. */
export function taskName(format: string, scenario: string): string {
  return `${format}-${scenario}`.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

export interface LogLine {
  level: string;
  task?: string;
  event?: string;
  episode?: number;
  errorClass?: string;
  msg?: string;
  [key: string]: unknown;
}

export interface EpisodicRun {
  code: number | null;
  stdout: string;
  stderr: string;
  lines: LogLine[];
  seconds: number;
  /** Set when the hang guard killed the run: the one message every test of the run fails with. */
  hangGuard?: string;
}

/**
 * Only a hang trips this: the work is bounded by the cases (episodes, per-episode timeouts), and a slow
 * machine takes longer without ever coming near it. node:test's suite timeout must be above it.
 */
export const HANG_GUARD_MS = 600_000;

/** The hang guard's message, with the end of what the process wrote to stderr. */
export function hangGuardMessage(what: string, ms: number, stderr: string): string {
  return `${what} did not end within ${ms / 1000} s (hang guard): killed; last stderr: ${stderr.slice(-1500)}`;
}

/** Throws the hang guard's message if it killed the run: before any check that reads what the run left. */
export function assertEnded(run: { hangGuard?: string }): void {
  if (run.hangGuard) throw new Error(run.hangGuard);
}

function parseLines(text: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const l of text.split('\n')) {
    try {
      if (l.startsWith('{')) lines.push(JSON.parse(l) as LogLine);
    } catch {
      // not a log line
    }
  }
  return lines;
}

/**
 * `episodic ARGS` as a real process with exactly `env` (nothing of the test machine's keys). With
 * `interruptWhen`, the run gets SIGINT (as from a terminal) once its log lines so far satisfy it: for runs
 * that would otherwise wait out a backoff or a usage limit.
 */
export function episodic(
  args: string[],
  env: Record<string, string>,
  opts: { hangGuardMs?: number; interruptWhen?: (lines: LogLine[]) => boolean } = {},
): Promise<EpisodicRun> {
  const started = Date.now();
  const guardMs = opts.hangGuardMs ?? HANG_GUARD_MS;
  let guardTripped = false;
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [cliEntry(), ...withJsonLogs(args)],
      { cwd: REPO, env, maxBuffer: 256 * 1024 * 1024 },
      (err, stdout, stderr) => {
        clearTimeout(guard);
        const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
        const code = e ? (typeof e.code === 'number' ? e.code : null) : 0;
        // With --log-format json the controller logs pino JSON lines (to stderr).
        resolve({
          code,
          stdout,
          stderr,
          lines: [...parseLines(stdout), ...parseLines(stderr)],
          seconds: (Date.now() - started) / 1000,
          hangGuard: guardTripped ? hangGuardMessage(`episodic ${args[0]}`, guardMs, stderr) : undefined,
        });
      },
    );
    // SIGTERM lets the controller stop its agents; SIGKILL if it does not end in 10 s more.
    const guard = setTimeout(() => {
      guardTripped = true;
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    }, guardMs);
    const { interruptWhen } = opts;
    if (!interruptWhen) return;
    // Each line is parsed once: the predicate sees every complete line so far, never a half-written one.
    const lines: LogLine[] = [];
    let partial = '';
    let sent = false;
    child.stderr?.on('data', (chunk: Buffer) => {
      partial += chunk.toString('utf8');
      const end = partial.lastIndexOf('\n') + 1;
      lines.push(...parseLines(partial.slice(0, end)));
      partial = partial.slice(end);
      if (!sent && interruptWhen(lines)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
  });
}

export interface RunnerRun {
  code: number | null;
  stdout: string;
  stderr: string;
  result: EpisodeResult | undefined;
  /** Set when the hang guard killed the runner. */
  hangGuard?: string;
}

/** The runner ends the agent at config.timeoutSeconds itself: this only catches a runner that hangs. */
export const RUNNER_HANG_GUARD_MS = 180_000;

/** `episodic episode -- argv` the way an episode pod runs it: config and prompt in the environment. */
export function episodeRunner(o: {
  argv: string[];
  config: Record<string, unknown>;
  prompt: string;
  env: Record<string, string>;
  dir: string;
}): Promise<RunnerRun> {
  mkdirSync(o.dir, { recursive: true });
  const resultFile = path.join(o.dir, 'termination-log');
  const env = { ...o.env, [EPISODE_CONFIG_ENV]: JSON.stringify(o.config), [EPISODE_PROMPT_ENV]: o.prompt };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        cliEntry(),
        'episode',
        '--result-file',
        resultFile,
        '--log-file',
        path.join(o.dir, 'episode.log'),
        '--',
        ...o.argv,
      ],
      { cwd: REPO, env, timeout: RUNNER_HANG_GUARD_MS, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { code?: number | string; killed?: boolean }) | null;
        const code = e ? (typeof e.code === 'number' ? e.code : null) : 0;
        let message = '';
        try {
          message = readFileSync(resultFile, 'utf8');
        } catch {
          // no result written
        }
        const guarded = e?.killed === true;
        const hangGuard = guarded ? hangGuardMessage('episodic episode', RUNNER_HANG_GUARD_MS, stderr) : undefined;
        resolve({ code, stdout, stderr, result: decodeTerminationMessage(message), hangGuard });
      },
    );
  });
}

export const CLIS: readonly CliName[] = ['claude', 'codex', 'gemini'];
