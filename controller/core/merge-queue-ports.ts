// What the merge queue's loop (merge-queue-loop.ts) needs of each mode: where a queue's clone and journal
// live, a task's remote and credentials, how the queue's gates run, and how resolution episodes run.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import type { Forge } from '../forge/types.ts';
import type { Gate, GateRun } from '../api/gates.ts';
import type { GitCredentials } from '../git/git-credentials.ts';
import type { QueueJournal } from '../reconciler/merge-queue.ts';
import type { ResolutionRun } from './ports.ts';

/** What the loop needs of a task: its key, spec and recorded status; its labels name the trigger that made it. */
export interface QueueTask {
  key: string;
  spec: AgentTaskSpec;
  status: AgentTaskStatus;
  labels?: Readonly<Record<string, string>>;
}

/** A task's resolution episodes, run and recorded as its other episodes are (each mode's root binds them). */
export interface QueueEpisodes {
  /** A slot of --max-concurrent, held until the release is called: a resolution episode is an agent too. */
  slot(): Promise<() => void>;
  /** Through the EpisodeExecutor port: the task's agent, sandbox and gateway. */
  run(key: string, run: ResolutionRun): Promise<EpisodeResult>;
  kill(key: string, number: number): Promise<void>;
  /** The episode's record, once the status counting it is written. */
  record(key: string, record: EpisodeRecord): Promise<void>;
}

/** Where each queue's journal lives; read() answers from what was loaded or written (no I/O per pass). */
export interface QueueJournals {
  read(queue: string): QueueJournal | undefined;
  /** Durable when it resolves: the step it announces runs next. undefined: the queue has nothing in flight. */
  write(queue: string, journal: QueueJournal | undefined): Promise<void>;
}

/** A task's pull request onto its `into`, as its trigger recorded it, and the forge client that merges it. */
export interface QueuePull {
  number: number;
  url: string;
  forge: Pick<Forge, 'pullMergeState' | 'mergePullRequest'>;
}

/**
 * Where a task's PR is known (its trigger's spec.report.pullRequest and status.pullRequests). 'awaiting': the
 * trigger will open one and has not yet; undefined: none (the queue pushes `into` itself).
 */
export interface QueuePulls<T extends QueueTask> {
  of(task: T): 'awaiting' | { number: number } | undefined;
  /** The PR with its forge client (the trigger's token resolved): only for a task of()'s answered with a number. */
  open(task: T): Promise<QueuePull>;
}

/** What differs between modes. */
export interface MergeQueuePorts<T extends QueueTask> {
  journals: QueueJournals;
  /** The queue's clone: locally under the state directory, on a cluster in the controller's scratch volume. */
  cloneDir(queue: string): string;
  /** The queue a task waits in (a cluster's are per namespace: so are its git credentials). */
  queueOf(task: T): string | undefined;
  /** The queue's name in a task's status and messages: the spec's (a cluster's key is NS/QUEUE). */
  shownName(queue: string): string;
  /** The task's remote as git is given it (locally a spec-relative path is resolved). Throws if it has none. */
  remoteUrl(task: T): string;
  credentials(task: T): Promise<GitCredentials | undefined>;
  /** The queue's gates in the rebased tree (`cwd`), stopping at the first failure: locally processes, on a cluster a pod. */
  gates(queue: string, task: T, gates: readonly Gate[], cwd: string): Promise<GateRun[]>;
  /** After a restart at the gate step: stop what is left of the gate run a killed controller started. */
  stopGates?(queue: string, task: T): Promise<void>;
  /** The queue's metric labels (default {queue}); a cluster's name its namespace apart. */
  metricLabels?(queue: string): Record<string, string>;
  /** Tasks' pull requests (sources/triggers/trigger-pulls.ts; without it every task is pushed). */
  pulls?: QueuePulls<T>;
}
