// One local child process (an agent or a verify command) that leads its own process group, has its output
// appended to a log, and on timeout, cancel or exit leaves no descendant behind.
import { randomUUID } from 'node:crypto';
import type { Launch, LaunchOptions } from './launch.ts';
import { launchDirect } from './launch-direct.ts';
import { launchViaHelper } from './launch-helper.ts';
import { killProcessTree, readPidStartTime, TREE_MARKER_ENV } from './process-tree.ts';

// setTimeout overflows above 2^31-1 ms and would fire immediately.
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface TrackedProcessOptions extends LaunchOptions {
  timeoutMs: number;
  killGraceMs: number;
  /** TREE_MARKER_ENV for the process and all it starts (default: a new random one). */
  marker?: string;
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
  /** Resolves (never rejects) once the process and all its descendants are gone and output is collected. */
  exit: Promise<TrackedExit>;
  cancel(): void;
  /** Lets a process started with `hold` exec; a no-op otherwise. */
  release(): void;
}

/** Resolves once the process runs (or could not be started: then `exit` says why). */
export async function startTrackedProcess(opts: TrackedProcessOptions): Promise<TrackedProcess> {
  const marker = opts.marker ?? randomUUID();
  const launchOpts = { ...opts, env: { ...opts.env, [TREE_MARKER_ENV]: marker } };
  let launched: Launch;
  try {
    launched = opts.helper ? await launchViaHelper(opts.helper, launchOpts) : await launchDirect(launchOpts);
  } catch (err) {
    launched = { ok: false, code: 'ESPAWN', message: `cannot start ${opts.argv[0]}: ${(err as Error).message}` };
  }
  if (!launched.ok) return { exit: Promise.resolve(spawnFailure(launched.code, launched.message)), cancel() {}, release() {} };
  const { pid } = launched;

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

  const exit = (async (): Promise<TrackedExit> => {
    const { code, signal, lost, spawnError } = await launched.exited;
    exited = true;
    clearTimeout(timer);
    if (spawnError) {
      await launched.collectOutput();
      return { ...spawnFailure(spawnError.code, spawnError.message), timedOut, cancelled };
    }
    // Also on a normal exit: background processes the agent left behind must not outlive the episode.
    if (stopping) await stopping;
    else if (lost || (await launched.mayHaveLeftovers())) await killTree();
    await launched.collectOutput();
    if (lost) return { ...spawnFailure('EHELPER', `${lost}; the episode's processes were stopped`), timedOut, cancelled };
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
    release: () => launched.release(),
  };
}

function spawnFailure(code: string, message: string): TrackedExit {
  return { exitCode: null, spawnErrorCode: code, spawnErrorMessage: message, timedOut: false, cancelled: false };
}
