// One local child process (an agent or a verify command) that leads its own process group, streams its
// output without buffering it, and on timeout, cancel or exit leaves no descendant behind.
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { killProcessTree, readPidStartTime, TREE_MARKER_ENV } from './process-tree.ts';

// A descendant we could not kill may hold the output pipes open; stop waiting for EOF after this long.
const STREAM_DRAIN_MS = 2000;
// setTimeout overflows above 2^31-1 ms and would fire immediately.
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface TrackedProcessOptions {
  argv: string[];
  cwd: string;
  /** Added to process.env. */
  env: Record<string, string>;
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  stdinText?: string;
  /** stdout and stderr are appended here (not ended: the caller owns it). */
  log: Writable;
  onOutput?: (chunk: Buffer, stream: 'stdout' | 'stderr') => void;
  timeoutMs: number;
  killGraceMs: number;
}

export interface TrackedExit {
  exitCode: number | null;
  signal?: string;
  spawnErrorCode?: string;
  spawnErrorMessage?: string;
  timedOut: boolean;
  cancelled: boolean;
}

export interface TrackedProcess {
  /** Undefined when the command could not be started. */
  pid?: number;
  pidStartTime?: string;
  /** Resolves (never rejects) once the process and all its descendants are gone and output is drained. */
  exit: Promise<TrackedExit>;
  cancel(): void;
}

export function startTrackedProcess(opts: TrackedProcessOptions): TrackedProcess {
  const marker = randomUUID();
  let subprocess: ReturnType<typeof spawn>;
  try {
    subprocess = spawn(opts, marker);
  } catch (err) {
    // Invalid arguments (e.g. an empty argv) throw synchronously.
    return notStarted(errorCode(err), `cannot start ${opts.argv[0] ?? '(empty command)'}: ${errorText(err)}`);
  }
  const pid = subprocess.pid;
  if (pid === undefined) {
    const exit = subprocess.then((r) => {
      const cause = r.cause instanceof Error ? r.cause.message : r.shortMessage;
      return spawnFailure(r.code ?? 'ESPAWN', `cannot start ${opts.argv[0]}: ${cause}`);
    }, (err: unknown) => spawnFailure(errorCode(err), `cannot start ${opts.argv[0]}: ${errorText(err)}`));
    return { exit, cancel() {} };
  }

  const pidStartTime = readPidStartTime(pid);
  const killTree = () => killProcessTree(pid, { graceMs: opts.killGraceMs, marker, pgid: pid, startTime: pidStartTime });
  let timedOut = false;
  let cancelled = false;
  let exited = false;
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= killTree();
  };
  const timer = Number.isFinite(opts.timeoutMs)
    ? setTimeout(
        () => {
          timedOut = true;
          stop();
        },
        Math.min(Math.max(opts.timeoutMs, 0), MAX_TIMER_MS),
      )
    : undefined;

  if (subprocess.stdin) {
    subprocess.stdin.on('error', () => {}); // EPIPE when the agent never reads its stdin: not our failure
    subprocess.stdin.end(opts.stdinText ?? '');
  }
  const outputs = [streamOutput(subprocess.stdout, 'stdout', opts), streamOutput(subprocess.stderr, 'stderr', opts)];
  const exitEvent = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    subprocess.once('exit', (code, signal) => resolve({ code, signal })),
  );

  const exit = (async (): Promise<TrackedExit> => {
    const { code, signal } = await exitEvent;
    exited = true;
    clearTimeout(timer);
    // Also on a normal exit: background processes the agent left behind must not outlive the episode.
    await (stopping ?? killTree());
    await drain(outputs);
    await subprocess.catch(() => undefined);
    return { exitCode: code, ...(signal ? { signal } : {}), timedOut, cancelled };
  })();

  return {
    pid,
    pidStartTime,
    exit,
    cancel() {
      if (exited) return;
      cancelled = true;
      stop();
    },
  };
}

function spawn(opts: TrackedProcessOptions, marker: string) {
  const [file, ...args] = opts.argv;
  // Reported like a missing command: a configuration error that retrying cannot fix.
  if (file === undefined) throw Object.assign(new Error('empty argv'), { code: 'ENOENT' });
  return execa(file, args, {
    cwd: opts.cwd,
    env: { ...opts.env, [TREE_MARKER_ENV]: marker },
    extendEnv: true,
    detached: true, // leads its own process group, so the group can be signalled as a whole
    buffer: false, // never hold the output in memory: a chatty agent can print gigabytes
    reject: false,
    stdin: opts.stdinText === undefined ? 'ignore' : 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
}

function streamOutput(stream: Readable | null, name: 'stdout' | 'stderr', opts: TrackedProcessOptions) {
  if (!stream) return undefined;
  const onOutput = opts.onOutput;
  if (onOutput) {
    stream.on('data', (chunk: Buffer) => {
      try {
        onOutput(chunk, name);
      } catch {
        // A throwing consumer must not crash the controller from inside a stream event; the log still has it.
      }
    });
  }
  // pipe() applies backpressure: if the log disk is slow the agent blocks on write instead of us buffering.
  stream.pipe(opts.log, { end: false });
  // If the log fails, pipe() detaches; keep reading so the agent is not blocked on a full pipe forever.
  opts.log.once('error', () => stream.resume());
  return stream;
}

async function drain(outputs: (Readable | undefined)[]): Promise<void> {
  const streams = outputs.filter((s): s is Readable => s !== undefined);
  const allClosed = Promise.all(streams.map((s) => finished(s).catch(() => undefined)));
  const timedOut = await Promise.race([allClosed.then(() => false), sleep(STREAM_DRAIN_MS, undefined, { ref: false }).then(() => true)]);
  if (timedOut) streams.forEach((s) => s.destroy());
  for (const s of streams) s.unpipe();
}

function notStarted(code: string, message: string): TrackedProcess {
  return { exit: Promise.resolve(spawnFailure(code, message)), cancel() {} };
}

function spawnFailure(code: string, message: string): TrackedExit {
  return { exitCode: null, spawnErrorCode: code, spawnErrorMessage: message, timedOut: false, cancelled: false };
}

function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'ESPAWN';
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
