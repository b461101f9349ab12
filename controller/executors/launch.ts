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
}

export interface LaunchExit {
  code: number | null;
  signal?: NodeJS.Signals;
  /** The process's fate is unknown (the spawn helper died); set instead of code/signal. */
  lost?: string;
}

export type Launch =
  | {
      ok: true;
      /** Leads its own process group. */
      pid: number;
      exited: Promise<LaunchExit>;
      /** After the process exited: whether descendants may still run (false = certainly none). */
      mayHaveLeftovers(): boolean | Promise<boolean>;
      /** After exit and kill: hands the remaining output to onOutput and settles the log. Never rejects. */
      collectOutput(): Promise<void>;
    }
  | { ok: false; code: string; message: string };

export function launchFailure(code: string, message: string): Launch {
  return { ok: false, code, message };
}
