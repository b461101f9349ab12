// What the one controller loop (controller.ts) is given: its three ports, the limits it keeps, and the optional
// parts each mode wires in (budgets, ops, spawn/send, mailbox and credential events).
import type { Logger } from 'pino';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import type { CredentialsPaused } from '../reconciler/credentials-hold.ts';
import type { NamespaceCredentials } from '../reconciler/credentials-choice.ts';
import type { BudgetStore } from './budget-book.ts';
import type { Clock } from './clock.ts';
import type { MailboxEvents } from './mailboxes.ts';
import type { DesiredTask, EpisodeExecutor, OpsApplier, StatusSink, TaskSource } from './ports.ts';
import type { SpawnLoop } from './spawn-loop.ts';

export interface ControllerOptions<T extends DesiredTask> {
  source: TaskSource<T>;
  executor: EpisodeExecutor<T>;
  sink: StatusSink<T>;
  logger: Logger;
  /** --max-concurrent: episodes running at once across all tasks. */
  maxConcurrent: number;
  /** --budget-usd: no episode starts once all tasks together spent this much. */
  budgetUSD?: number;
  /** AgentBudgets: checked before every episode, their ledgers kept by this loop. */
  budgets?: BudgetStore;
  /** Reconciles of different tasks in flight at once. */
  workers?: number;
  metrics?: EpisodicMetrics;
  clock?: Clock;
  /** In [0, 1): backoff jitter. */
  random?: () => number;
  /** spec.agent.credentials: whether every credential of the task's pool is paused (a usage limit), until when. */
  credentialsPaused?: (task: T) => CredentialsPaused | undefined | Promise<CredentialsPaused | undefined>;
  /** The namespace's AgentCredentials (name, spec.default): the loop chooses each task's (credentials-choice.ts). */
  namespaceCredentials?: (namespace: string) => readonly NamespaceCredentials[];
  /** A pool's pauses changed, or an AgentCredentials did (namespace, name): its tasks are looked at again, all at once. */
  credentialEvents?: { subscribe(fn: (namespace: string, name: string) => void): void };
  /**
   * Tasks on record that their source no longer has (deleting), e.g. a spec deleted while no controller
   * ran: reconciled once at start() like any deleted task, so their episodes are recorded before release.
   */
  deletedTasks?: readonly T[];
  /** Agent ops with effects outside the status (blackboard, spawn, send). */
  ops?: OpsApplier<T>;
  /** spawn/send: children, mailboxes and their placeholders (core/spawn-loop.ts). */
  spawn?: SpawnLoop<T>;
  /** Mailbox arrivals: the task is reconciled at once (wake: onMessage, interrupt) instead of at its resync. */
  mailboxEvents?: MailboxEvents;
}
