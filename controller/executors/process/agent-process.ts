// One process of an episode (the agent or verify): started from an argv without a shell as the leader of its
// own process group, its output written into spool files it holds open (so a result printed while the
// controller is stopped or killed is on disk), followed into the episode log, its whole tree killed on timeout
// or cancel.
import { closeSync, constants, existsSync, openSync, rmSync, statfsSync } from 'node:fs';
import type { ResultPromise } from 'execa';
import type { EpisodeLog, OutputListener } from './episode-log.ts';
import { systemClock } from '../../core/clock.ts';
import { FileTail } from '../../util/file-tail.ts';
import type { ProcessExit } from '../output/types.ts';
import { killProcessTree, pidCursor, readPidStartTime } from './process-tree.ts';
import { cannotStartMessage } from './cannot-start.ts';

interface ProcessOptions {
  cwd: string;
  /** The process's whole environment (process-episode.ts builds it from the controller's). */
  env: Record<string, string>;
  /** Becomes stdin; /dev/null without it. */
  stdinFile?: string;
  timeoutMs: number;
  killGraceMs: number;
  marker: string;
  log: EpisodeLog;
  /** Where the process writes its output (see spoolFiles). */
  spool: { stdout: string; stderr: string };
  onOutput: OutputListener;
  /** The spec field the argv comes from, named in a "cannot start" message (spec.agent.command…). */
  field: string;
}

export interface ProcessEnd extends ProcessExit {
  timedOut: boolean;
  cancelled: boolean;
}

interface StartedProcess {
  /** Undefined when the command could not be started. */
  pid?: number;
  pidStartTime?: string;
  /** Never rejects; resolves once the process and all its descendants are gone and its output is logged. */
  exit: Promise<ProcessEnd>;
  cancel(): void;
  /** Kills the whole tree without calling it cancelled (a sandbox bound was hit). */
  stop(): void;
  /** After exit and the notes about it: waits until the log has it all, then removes the spool files. */
  release(): Promise<void>;
}

export function startProcess(execa: typeof import('execa').execa, argv: string[], o: ProcessOptions): StartedProcess {
  const [file, ...args] = argv;
  const release = async () => {
    await o.log.flushed();
    // With no room for the log, the spool files hold what it could not (and keep the disk as full as it is).
    if (!o.log.noRoom) removeSpool(o.spool);
  };
  // Node's errno in plain words with what to do (cannot-start.ts); a missing cwd is an ENOENT too, so it is looked at.
  const cannotStart = (err: unknown, code = errorCode(err)) =>
    cannotStartMessage({
      file,
      code,
      detail: errorText(err),
      field: o.field,
      cwd: o.cwd,
      cwdExists: existsSync(o.cwd),
    });
  // Reported like a missing command: a configuration error that retrying cannot fix.
  if (file === undefined) return notSpawned('ENOENT', cannotStart('empty argv', 'ENOENT'), release);
  let fds: { stdout: number; stderr: number };
  try {
    fds = openSpool(o.spool);
  } catch (err) {
    return notSpawned(
      errorCode(err),
      `cannot start ${file}: cannot create its output file: ${errorText(err)}`,
      release,
    );
  }
  let child: ResultPromise;
  const after = pidCursor(); // the process and all it starts get later pids: the kill looks at those only
  try {
    child = execa(file, args, {
      cwd: o.cwd,
      env: o.env,
      extendEnv: false,
      detached: true, // leads its own process group, so the group can be signalled as a whole
      buffer: false, // never hold the output in memory: a chatty agent can print gigabytes
      reject: false,
      stdin: o.stdinFile === undefined ? 'ignore' : { file: o.stdinFile },
      // Straight into the files, no pipe: the output survives a controller killed before it read it.
      stdout: descriptor(fds.stdout),
      stderr: descriptor(fds.stderr),
    });
  } catch (err) {
    return notSpawned(errorCode(err), cannotStart(err), release);
  } finally {
    closeSync(fds.stdout); // the child has its own copies
    closeSync(fds.stderr);
  }
  const pid = child.pid;
  if (pid === undefined) {
    const exit = child.then(
      (r) => spawnFailure(r.code ?? 'ESPAWN', cannotStart(r.cause ?? r.shortMessage, r.code ?? 'ESPAWN')),
      (err: unknown) => spawnFailure(errorCode(err), cannotStart(err)),
    );
    return { exit, cancel() {}, stop() {}, release };
  }
  const pidStartTime = readPidStartTime(pid);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  const tails = { stdout: new FileTail(o.spool.stdout), stderr: new FileTail(o.spool.stderr) };
  const outputDone = o.log.follow(tails.stdout, tails.stderr, o.onOutput);
  let stopping: Promise<void> | undefined;
  const killTree = () =>
    (stopping ??= killProcessTree(pid, {
      graceMs: o.killGraceMs,
      marker: o.marker,
      pgid: pid,
      startTime: pidStartTime,
      after,
    }));
  let timedOut = false;
  let cancelled = false;
  let ended = false;
  // Through the clock's timer: a timeout past setTimeout's 2^31-1 ms re-arms instead of firing early.
  const timer = Number.isFinite(o.timeoutMs)
    ? systemClock.setTimer(() => {
        timedOut = true;
        killTree();
      }, o.timeoutMs)
    : undefined;
  const exit = exited.then(async ({ code, signal }): Promise<ProcessEnd> => {
    ended = true;
    timer?.cancel();
    // Also after a normal exit: what the process left running in the background must not outlive it.
    await killTree();
    // Nothing of the tree writes the spool files any more: read them to their end.
    tails.stdout.stop();
    tails.stderr.stop();
    await outputDone();
    return { exitCode: code, ...(signal ? { signal } : {}), timedOut, cancelled };
  });
  return {
    pid,
    pidStartTime,
    exit,
    cancel() {
      if (ended) return;
      cancelled = true;
      void killTree();
    },
    stop() {
      if (!ended) void killTree();
    },
    release,
  };
}

/** The spool files, created empty, for the process's stdout and stderr. */
function openSpool(spool: { stdout: string; stderr: string }): { stdout: number; stderr: number } {
  // O_APPEND: the agent and its descendants share the descriptor, and a write never overwrites another.
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND;
  const stdout = openSync(spool.stdout, flags, 0o600);
  try {
    return { stdout, stderr: openSync(spool.stderr, flags, 0o600) };
  } catch (err) {
    closeSync(stdout);
    throw err;
  }
}

// An agent writes its output onto the state disk itself: with less room than this left, its failure is
// taken for one writing its output (a full disk has none; the smallest blocks are this size or less).
const NO_ROOM_BYTES = 1024 * 1024;

/** ENOSPC when the file system of `dir` is (all but) full. */
export function noRoomOn(dir: string): string | undefined {
  try {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize < NO_ROOM_BYTES ? 'ENOSPC' : undefined;
  } catch {
    return undefined;
  }
}

/** execa's types name descriptors 3-9 only; at run time any open descriptor is handed to the child as is. */
function descriptor(fd: number): 3 {
  return fd as 3;
}

function removeSpool(spool: { stdout: string; stderr: string }): void {
  rmSync(spool.stdout, { force: true });
  rmSync(spool.stderr, { force: true });
}

function notSpawned(code: string, message: string, release: () => Promise<void>): StartedProcess {
  return { exit: Promise.resolve(spawnFailure(code, message)), cancel() {}, stop() {}, release };
}

function spawnFailure(code: string, message: string): ProcessEnd {
  return { exitCode: null, spawnErrorCode: code, spawnErrorMessage: message, timedOut: false, cancelled: false };
}

export function errorCode(err: unknown, otherwise = 'ESPAWN'): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : otherwise;
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
