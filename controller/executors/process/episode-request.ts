// What one episode of local processes is asked to run (ProcessEpisodeRequest) and the handle it gives back
// (RunningEpisode): the local executor and the in-pod runner build the one, process-episode.ts runs it.
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { Gate } from '../../api/gates.ts';
import type { SandboxResources } from '../../api/sandbox.ts';
import type { AnalyzerOptions } from '../output/types.ts';
import type { EpisodeSandbox } from '../sandbox/episode-sandbox.ts';

export type PromptVia = 'stdin' | 'argument' | 'file';

export interface ProcessEpisodeRequest {
  namespace: string;
  name: string;
  /** 1-based. */
  episode: number;
  maxEpisodes: number;
  /** spec.agent.command: an argv array, never run through a shell. */
  argv: string[];
  promptVia: PromptVia;
  /** The rendered prompt text. */
  prompt: string;
  /** Extra environment (spec.agent.env, resolved); added on top of baseEnv and the EPISODIC_* vars. */
  env?: Record<string, string>;
  /** What of the controller's environment the processes inherit (api/agent-env.ts); default: all of it. */
  baseEnv?: Record<string, string>;
  /** The workspace directory; must exist. */
  cwd: string;
  timeoutMs: number;
  /** SIGTERM → SIGKILL delay. Default 5000. */
  killGraceMs?: number;
  /** Output of the agent (and verify) is appended here; parent directories are created. */
  logFile: string;
  /** Run in cwd after a completion signal; exit 0 confirms it. */
  verify?: string[];
  /** Exit code 0 alone counts as a completion claim (so verify runs after it). */
  onExitZero: boolean;
  /**
   * Write how the agent exited into the log (default true), for a controller restarted before it records the
   * end. The in-pod runner says it in the termination message instead and keeps the pod log the agent's own.
   */
  exitNote?: boolean;
  analyzer: AnalyzerOptions;
  /** spec.steps[].gates of the episode's step: run after a completion claim that verify (if any) confirmed. */
  gates?: Gate[];
  /** A fix episode (status.steps[].gate): the gates run after any clean exit, claim or not. */
  fixEpisode?: boolean;
  /**
   * spec.progress.checklist (in cwd) and spec.completion.checklist: a clean exit that leaves the plan complete
   * meets the completion rule without a claim, so the gates run after it too (checklistMeetsCompletion).
   */
  checklist?: { file: string; completes: boolean };
  /**
   * Where the prompt is written for promptVia stdin/file: a scratch file reused by every episode of the
   * task (rewritten in place, see rewriteInPlace in util/fs.ts). Default: episode-N.prompt.md by the log.
   */
  promptFile?: string;
  /** spec.sandbox (local): every process of the episode runs wrapped in bubblewrap (sandbox/episode-sandbox.ts). */
  sandbox?: EpisodeSandbox;
  /** spec.sandbox.resources, for the message of a bound hit. */
  sandboxResources?: SandboxResources;
  /**
   * TREE_MARKER_ENV of every process of the episode, agent and verify (default: a new random one): what a
   * restarted controller looks for to kill what a crashed one left running.
   */
  marker?: string;
}

export interface RunningEpisode {
  /** Process group leader; undefined when the command could not be started. */
  pid: number | undefined;
  /** /proc start time of pid, to recognise the same process after a controller restart (Linux only). */
  pidStartTime?: string;
  /** Never rejects; the log is complete when it resolves. */
  result: Promise<EpisodeResult>;
  /**
   * Kill the whole process tree (agent or verify); the result then says cancelled (and `why`, in the log
   * and the message). No-op once finished.
   */
  cancel(why?: string): void;
}

/** The request's `checklist`: spec.progress.checklist, and whether it completes the step (completion.checklist). */
export function checklistRule(
  file: string | undefined,
  completion: { checklist: boolean },
): Pick<ProcessEpisodeRequest, 'checklist'> {
  return file ? { checklist: { file, completes: completion.checklist } } : {};
}
