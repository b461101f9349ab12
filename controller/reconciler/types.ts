// What goes into the pure reconciler and what comes out of it.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import type { ApplyRejection } from '../api/ops.ts';
import type { ResumeRequest } from '../api/resume.ts';
import type { SuspendHold } from '../api/hold.ts';
import type { Action, StopReason } from './actions.ts';
import type { BudgetFacts } from './budget.ts';
import type { DependencyFact } from './dependencies.ts';
import type { SpawnFacts } from './spawn-decide.ts';
import type { AdoptOutcome } from '../api/attempts.ts';
import type { CredentialsPaused } from './credentials-hold.ts';
import type { CredentialsChoice } from './credentials-choice.ts';

/** Grace past the episode timeout before the reconciler itself asks for a stop (the executor should have). */
export const DEADLINE_GRACE_MS = 30_000;
/** Usage limit without a parseable reset time. */
export const USAGE_LIMIT_FALLBACK_MS = 60 * 60 * 1000;
/** A reset that passed while the episode ended (a busy machine): retry after this, not after the hour's fallback. */
export const USAGE_LIMIT_PASSED_RESET_MS = 5_000;

/**
 * When a usage-limited task may run again: the reported reset; a reset that passed within the fallback window
 * (the limit lifted while the episode was ending) after a short floor; no reset, or one older than that, an hour on.
 */
export function usageLimitResumeAt(resetAt: string | undefined, now: number): number {
  const reset = resetAt ? Date.parse(resetAt) : Number.NaN;
  if (reset > now) return reset;
  if (reset > now - USAGE_LIMIT_FALLBACK_MS) return now + USAGE_LIMIT_PASSED_RESET_MS;
  return now + USAGE_LIMIT_FALLBACK_MS;
}

/** What an executor sees of a task's newest episode: facts only; reconcile() decides what they mean. */
export interface ObservedEpisode {
  number: number;
  /** 'gone': nothing of the episode exists any more (or never did) and it left no result. */
  state: 'running' | 'finished' | 'gone';
  startedAt?: string;
  finishedAt?: string;
  /** Present when state is 'finished'. */
  result?: EpisodeResult;
  /** Running but cannot be scheduled (cluster): the task waits, and the episode's clock does not run. */
  unschedulable?: string;
  /** When 'gone': who removed its pod or process. Undefined: it never existed (a crash between recording and starting it). */
  removedBy?: 'controller' | 'someone-else';
  /** Cluster: the episode's pod, shown in status.currentEpisode. */
  podName?: string;
  /** Look again then even if nothing changes (e.g. when an image-pull grace period ends). */
  recheckAfterMs?: number;
}

export interface ReconcileInput {
  namespace: string;
  name: string;
  /** The task's labels: children it makes inherit them (spawn.ts). */
  labels?: Readonly<Record<string, string>>;
  generation: number;
  /** Undefined when the spec does not validate; specError then says why. */
  spec?: AgentTaskSpec;
  specError?: string;
  /** The task is being deleted: stop what runs, start nothing. */
  deleted?: boolean;
  /** The controller is stopping (SIGINT): stop what runs, start nothing, and say so. */
  shuttingDown?: boolean;
  status: AgentTaskStatus;
  /** The newest episode the executor knows of for this task. */
  episode?: ObservedEpisode;
  /** A StopEpisode this controller already asked for: its reason decides how the episode ended. */
  stopRequested?: { number: number; reason: StopReason };
  /** An episode on record whose start threw an error worth retrying: started again, never renumbered. */
  startToRetry?: number;
  /** Each dependsOn entry as the loop saw it; undefined when that task does not exist. */
  dependencies: Record<string, DependencyFact | undefined>;
  /** A dependsOn cycle through this task, e.g. ["a", "b", "a"]. */
  dependencyCycle?: string[];
  /** Concurrency slots free now (--max-concurrent less what runs or is starting; 0 while stopping). */
  freeSlots: number;
  /** --budget-usd: the limit and what all OTHER tasks spent (this task's own spend is in status). */
  globalBudget?: { limitUSD: number; othersSpentUSD: number };
  /** A person's request to resume the task (an annotation, a local request file); handled once per token. */
  resumeRequest?: ResumeRequest;
  /** A person's suspend hold (an annotation, a local state file): suspended like spec.suspend (suspend.ts). */
  hold?: SuspendHold;
  /** The AgentBudgets that select this task (controller/core/budget-book.ts gathers them). */
  budgets?: readonly BudgetFacts[];
  /** Agent ops: the newest episode whose ApplyOps this controller carried out (in memory; lost on a restart). */
  opsApplied?: number;
  /** The ops of episode `opsApplied` refused while applying them (maxChildren reached, a full blackboard). */
  opsRefused?: readonly ApplyRejection[];
  /** spawn/send: the task's children and mailbox (spawn-decide.ts); undefined when the loop does not gather them. */
  spawn?: SpawnFacts;
  /** Best-of-N: whether the executor can make the winner's branch the task's, and its last AdoptWinner's outcome. */
  adoption?: { supported: boolean; outcome?: AdoptOutcome };
  /** Best-of-N with a judge: each candidate's diff by attempt number (attempts.ts diffsWanted), bounded. */
  attemptDiffs?: Readonly<Record<number, string>>;
  /** spec.agent.credentials: set while every credential of that pool is paused by a usage limit. */
  credentialsPaused?: CredentialsPaused;
  /** The AgentCredentials the loop chose (credentials-choice.ts); spec.agent.credentials already holds a name used. */
  credentials?: CredentialsChoice;
  now: Date;
  /** In [0, 1): the caller's randomness for backoff jitter. */
  jitter: number;
}

export interface ReconcileResult {
  status: AgentTaskStatus;
  actions: Action[];
  /** Reconcile again after this long even if nothing changes (a backoff ends, a deadline passes). */
  requeueAfterMs?: number;
  /** The AgentBudgets that keep this task from starting an episode now (for their status). */
  heldByBudgets?: string[];
  /** An episode ended or the phase changed: the tasks that dependOn this one get another look. */
  wakeDependents: boolean;
  /** Only a free slot (--max-concurrent) keeps the next episode from starting: look again when one frees. */
  waitsForSlot: boolean;
  /** The status on record stands and is not written again (a deleted task let go as it was left). */
  keepsStatus?: true;
}
