// The two ways an episode process gets started (directly, or through the spawn helper) share this shape, so
// tracked-process.ts can put timeouts, cancel and whole-tree kill on top of either.
import type { SpawnHelper } from './spawn-helper.ts';

export interface LaunchOptions {
  argv: string[];
  cwd: string;
  /** Added to the controller's environment. */
  env: Record<string, string>;
  /** Becomes stdin; /dev/null without it. */
  stdinFile?: string;
  /** stdout and stderr are appended here. */
  logFile: string;
  /** Sees all output (stdout and stderr apart) by the time collectOutput() resolves. */
  onOutput?: (chunk: Buffer, stream: 'stdout' | 'stderr') => void;
  /** Start through this helper instead of from the controller's own process. */
  helper?: SpawnHelper;
  /**
   * Where the helper puts stderr until exit (then it is appended to the log). Given: reused, truncated per
   * process (one process at a time per file). Default `${logFile}.stderr`, removed after.
   */
  stderrFile?: string;
  /**
   * Through the helper: stop just before exec until release(), so the caller can record the pid first.
   * A direct launch cannot hold: it runs at once.
   */
  hold?: boolean;
}

export interface LaunchExit {
  code: number | null;
  signal?: NodeJS.Signals;
  /** The process's fate is unknown (the spawn helper died); set instead of code/signal. */
  lost?: string;
  /** A held process could not be set up or exec'd (reported after its pid): nothing ran. */
  spawnError?: { code: string; message: string };
}

export type Launch =
  | {
      ok: true;
      /** Leads its own process group. */
      pid: number;
      exited: Promise<LaunchExit>;
      /** Lets a held process exec; a no-op otherwise. */
      release(): void;
      /** After the process exited: whether descendants may still run (false = certainly none). */
      mayHaveLeftovers(): boolean | Promise<boolean>;
      /** After exit and kill: hands the remaining output to onOutput and settles the log. Never rejects. */
      collectOutput(): Promise<void>;
    }
  | { ok: false; code: string; message: string };

export function launchFailure(code: string, message: string): Launch {
  return { ok: false, code, message };
}
