// The three ports the one controller loop runs over. Local mode implements them with a spec directory,
// processes and status files; cluster mode with an AgentTask informer, Pods and the /status subresource.
// Each mode's source, executor and sink share types through this file only, never by importing each other.
import type { LiveSpend } from '../reconciler/spend-cap.ts';
import type { EpisodeLeash } from '../api/episode-leash.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import type { Outputs } from '../api/outputs.ts';
import type { ApplyRejection, Op } from '../api/ops.ts';
import type { ResumeRequest } from '../api/resume.ts';
import type { SuspendHold } from '../api/hold.ts';
import type { CustomObject } from '../kube/objects.ts';
import type { ObservedEpisode, StopReason } from '../reconciler/reconcile.ts';
import type { Action } from '../reconciler/actions.ts';
import type { AdoptOutcome } from '../api/attempts.ts';

export type AdoptWinner = Extract<Action, { type: 'AdoptWinner' }>;

/** Desired state of one task, as its source has it now. */
export interface DesiredTask {
  /** "namespace/name": the work-queue key. */
  key: string;
  namespace: string;
  name: string;
  /** Bumped by every spec change (metadata.generation; locally a spec-hash counter). */
  generation: number;
  /** The validated, defaulted spec; undefined when it does not validate (specError says why). */
  spec?: AgentTaskSpec;
  specError?: string;
  /** dependsOn as written, even when the spec is invalid: the dependents index needs it. */
  dependsOn: readonly string[];
  /** The task is being deleted: stop what runs, start nothing, then release it. */
  deleting: boolean;
  /** A person's latest resume request (cluster: annotations; local: the state dir's request file). */
  resumeRequest?: ResumeRequest;
  /** A person's suspend hold (cluster: annotations; local: the state dir's hold file). */
  hold?: SuspendHold;
  /** metadata.labels: AgentBudget selectors match them. */
  labels?: Readonly<Record<string, string>>;
  /** Placeholders the loop adds to the prompt of the episode it starts ({{children}}, {{messages}}). */
  promptVars?: Readonly<Record<string, string>>;
}

/** Local mode: a task read from a spec file. */
export interface SpecFileTask extends DesiredTask {
  /** The file it came from: a relative workspace is resolved against it. */
  file: string;
  /** The system created it (a trigger, a spawn): its document and its default workspace are under the state dir. */
  created?: boolean;
  /** The spec's hash: a new one bumps the generation (locally there is no API server to count). */
  specHash: string;
}

/** Cluster mode: the object itself comes along for owner references and events. */
export interface ClusterTask extends DesiredTask {
  object: CustomObject;
}

/** A task's status as it was on record when the controller started (locally: its status file). */
export interface RecordedStatus {
  namespace: string;
  name: string;
  status: AgentTaskStatus;
}

/** Desired state and its changes. */
export interface TaskSource<T extends DesiredTask = DesiredTask> {
  get(key: string): T | undefined;
  list(): Iterable<T>;
  /** Called with a task's key whenever its desired state changes (added, edited, deleted). */
  subscribe(onChange: (key: string) => void): void;
  /** The controller has taken charge of the task: keep it until release() (cluster: add the finalizer). */
  hold(task: T): Promise<void>;
  /** A deleting task has nothing running any more: let it go (cluster: drop the finalizer). */
  release(task: T): Promise<void>;
}

/** The outputs of the tasks a task depends on, by name: what {{tasks.NAME.outputs.KEY}} reads. */
export type UpstreamOutputs = Record<string, Outputs | undefined>;

/** A merge queue's resolution episode: where it runs and what its prompt says (reconciler/merge-queue.ts). */
export interface ResolutionRun {
  /** The task's next episode number (its log, marker and record use it). */
  number: number;
  /** The queue's clone, stopped in the rebase. */
  cwd: string;
  template: string;
  vars: Readonly<Record<string, string>>;
  /** The task's status now: the gateway's leash is judged from it. */
  status: AgentTaskStatus;
  /** The queue's name. */
  queue: string;
  /** On a cluster: the branch holding the clone's tree, which the pod clones and pushes its work back to. */
  branch?: string;
  /** Aborted when the queue halts (leadership lost): the wait ends, the pod is left for the next leader. */
  signal?: AbortSignal;
}

/** Episodes: processes locally, Pods on a cluster. */
export interface EpisodeExecutor<T extends DesiredTask = DesiredTask> {
  /** Facts about the task's newest episode; undefined when there is none to tell about. */
  observe(task: T, status: AgentTaskStatus, now: Date): ObservedEpisode | undefined;
  /**
   * Starts episode `number`, whose start is already on record. Returns log fields about it (a pid, a pod).
   * Throws only for errors worth retrying; an episode that cannot run is reported by observe().
   */
  start(
    task: T,
    number: number,
    status: AgentTaskStatus,
    upstream?: UpstreamOutputs,
    /** What the episode may spend through the model gateway (tasks with spec.agent.credentials). */
    leash?: EpisodeLeash,
  ): Promise<Record<string, unknown>>;
  /**
   * Best-of-N: fast-forwards the task's branch to the winner's and deletes the losers' (the AdoptWinner
   * action); idempotent. Throws for errors worth retrying. Absent: the executor cannot (the winner's branch
   * is then only named in the task's outputs).
   */
  adoptWinner?(task: T, action: AdoptWinner): Promise<AdoptOutcome>;
  /** Best-of-N with a judge: each attempt's diff against the commit it started from, by number (bounded). */
  attemptDiffs?(
    task: T,
    attempts: readonly { number: number; task: string; branch?: string }[],
  ): Promise<Record<number, string>>;
  /**
   * spec.integrate: one resolution episode of the task (its agent, sandbox and gateway) in the merge queue's
   * clone with the queue's prompt; resolves when it has ended. Absent: the executor has no merge queue.
   */
  resolve?(task: T, run: ResolutionRun): Promise<EpisodeResult>;
  /** Kills what is left of a resolution episode a killed controller started (after a restart). */
  killResolution?(task: T, number: number): Promise<void>;
  /** Stops the episode; its end is reported by observe(). Idempotent. */
  stop(task: T, number: number, reason: StopReason): Promise<void>;
  /** After a reconcile whose status is written: housekeeping (cluster: old pods, finalizer). */
  tidy(task: T, status: AgentTaskStatus): Promise<void>;
  /** The task is gone for good: remove whatever is left of its episodes. */
  forget(key: string): Promise<void>;
  /** Episodes holding a concurrency slot now. */
  runningCount(): number;
  /**
   * What the model gateway metered so far on the task's running episode: the AgentBudgets count it for the
   * episodes of other tasks before its record does. Absent, or undefined: nothing is metered live.
   */
  liveSpend?(task: Pick<DesiredTask, 'namespace' | 'name'>): LiveSpend | undefined;
  /** Keys of every task the executor has an episode for (after a restart: what the source may lack). */
  keys(): Iterable<string>;
  /** Called with a task's key whenever one of its episodes changes (started, ended, vanished). */
  subscribe(onChange: (key: string) => void): void;
}

/** A status and the events of one task: files and log lines locally, /status and Events on a cluster. */
export interface StatusSink<T extends DesiredTask = DesiredTask> {
  /** The status last written for the task (pending writes included); undefined when none. */
  read(task: Pick<DesiredTask, 'key' | 'namespace' | 'name'>): AgentTaskStatus | undefined;
  /**
   * Records a status (the loop checked it against the schema). With `beforeStart` it returns only once the
   * status would survive a crash of the controller, so an episode is never running without being on record.
   */
  write(task: T, status: AgentTaskStatus, opts: { beforeStart: boolean }): Promise<void>;
  event(task: T, type: 'Normal' | 'Warning', reason: string, message: string, details: Record<string, unknown>): void;
  /**
   * Keeps the immutable record of a finished episode, once its status is written (local: a line of
   * episodes.jsonl; cluster: an AgentEpisode). Recording the same number again is harmless. Never throws:
   * a record that cannot be kept is logged, and status.lastEpisode still has its facts.
   */
  recordEpisode(task: T, record: EpisodeRecord): Promise<void>;
  /** The task is being deleted and nothing of it runs: remove its records (cluster; local logs stay). */
  forget(task: T): Promise<void>;
}

/**
 * Agent ops with effects outside a task's status (api/ops.ts: set, del, spawn, send), carried out by the
 * loop for an ApplyOps action. Must be idempotent per (task, episode): a controller killed after applying
 * and before recording that it did applies the same episode's ops again on its next run.
 */
export interface OpsApplier<T extends DesiredTask = DesiredTask> {
  /** Throws only for errors worth retrying (the pass is retried); an op that cannot apply is rejected. */
  apply(task: T, episode: number, ops: readonly Op[]): Promise<AppliedOps>;
}

export interface AppliedOps {
  /** Ops refused while applying (a full blackboard, no handler for the op): in an Event, the status and the record. */
  rejected: ApplyRejection[];
}

/**
 * The state store has no room (a full disk, a quota, a file size limit): nothing more can be recorded, so
 * nothing may start. Its sink reports it once; the loop retries the pass with backoff and does not log it.
 */
export class StoreFullError extends Error {
  override name = 'StoreFullError';
}

/** An error retrying cannot fix (controller-runtime's TerminalError): logged, counted, not requeued. */
export class TerminalError extends Error {
  override name = 'TerminalError';
}
