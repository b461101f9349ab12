// The contract between an episode's byte streams and its EpisodeResult.
import type { ErrorClass, OutputFormat } from '../../api/episode-result.ts';
import type { Tokens } from '../../api/agent-task.ts';
import type { RalphStatus } from '../../api/leash.ts';
import type { OutputPair } from '../../api/outputs.ts';

export type OutputSetting = OutputFormat | 'auto';

export interface AnalyzerOptions {
  /** What spec.agent.output says; 'auto' detects the format from the first lines. */
  format: OutputSetting;
  /** The completion promise value: done when the final output contains <promise>VALUE</promise>. */
  promise: string;
  /** USD per million tokens, used when the agent reports tokens but no cost. */
  pricing?: { inputPerMTok: number; outputPerMTok: number; cacheReadPerMTok?: number; cacheWritePerMTok?: number };
  /** Clock, for turning "resets 3pm (Europe/Berlin)" into an absolute time. */
  now?: () => Date;
  /**
   * IANA zone of reset times the agent prints without one (codex: "try again at 7:13 AM"):
   * spec.completion.resetTimeZone. Default: this process's zone (TZ), which is the agent's own unless the
   * spec gives the agent a TZ of its own.
   */
  timeZone?: string;
  /** The rendered prompt: plain-text output that echoes it whole does not count as the final answer. */
  prompt?: string;
  /**
   * spec.agent.command. With 'auto' or 'text', plain text from a command named claude, codex or gemini
   * (argv[0]'s basename) is classified by that CLI's rules; other commands get the generic rules.
   */
  command?: readonly string[];
  /** spec.completion.signals is set: look for completion keywords in the final answer. */
  signals?: boolean;
}

export interface ProcessExit {
  exitCode: number | null;
  signal?: string;
  /** e.g. 'ENOENT' when the agent command does not exist. */
  spawnErrorCode?: string;
  spawnErrorMessage?: string;
}

/** What the output says about the episode; the executor adds exit code, timing and verify. */
export interface OutputAnalysis {
  format: OutputFormat;
  agentError: boolean;
  errorClass: ErrorClass;
  resetAt?: string;
  /** The classification rule that decided errorClass (e.g. claude.usage-limit), for tests and debugging. */
  rule?: string;
  completion?: 'promise' | 'exitSignal';
  /** The last RALPH_STATUS block of the final answer. */
  ralph?: RalphStatus;
  /** Completion keywords found in the final answer (only with AnalyzerOptions.signals). */
  keywords?: string[];
  costUSD: number;
  tokens: Tokens;
  message?: string;
  /** <output name="KEY">VALUE</output> tags of the final answer, unbounded yet (api/outputs.ts boundOutputs). */
  outputs?: OutputPair[];
}

/** Incremental, bounded-memory reader of one episode's output. */
export interface OutputAnalyzer {
  write(chunk: Buffer | string, stream: 'stdout' | 'stderr'): void;
  finish(exit: ProcessExit): OutputAnalysis;
}
