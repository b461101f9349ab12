// What the loop counts across tasks: each task's spend (the --budget-usd fact is what all OTHER tasks spent)
// and its phase, kept in the phase gauges and the leash/review metrics as passes decide them.
import type { AgentTaskStatus, Phase } from '../api/agent-task.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import type { DesiredTask } from './ports.ts';

export class TaskTally {
  private readonly metrics: EpisodicMetrics | undefined;
  private readonly spent = new Map<string, number>();
  private totalSpent = 0;
  private readonly phases = new Map<string, Phase>();

  constructor(metrics: EpisodicMetrics | undefined) {
    this.metrics = metrics;
  }

  /** First sight of a task: its spend and phase as on record. */
  seen(task: DesiredTask, recorded: AgentTaskStatus | undefined): void {
    this.spent.set(task.key, recorded?.costUSD ?? 0);
    this.totalSpent += recorded?.costUSD ?? 0;
    const phase = recorded?.phase ?? 'Pending';
    this.phases.set(task.key, phase);
    this.metrics?.movePhase(task.namespace, undefined, phase);
    if (recorded) this.metrics?.leash.trackWaiting(task.key, task.namespace, recorded);
    if (recorded) this.metrics?.resume.trackReview(task.key, task.namespace, recorded);
  }

  /** What every task but this one spent. */
  spentByOthers(key: string): number {
    return this.totalSpent - (this.spent.get(key) ?? 0);
  }

  /** A pass decided `status`: counted before its first await, so parallel passes see the spend. */
  decided(task: DesiredTask, before: AgentTaskStatus, status: AgentTaskStatus): void {
    this.totalSpent += status.costUSD - (this.spent.get(task.key) ?? 0);
    this.spent.set(task.key, status.costUSD);
    const metrics = this.metrics;
    if (!metrics) return;
    metrics.observeTransition(task.namespace, before, status);
    metrics.leash.trackWaiting(task.key, task.namespace, status);
    metrics.resume.trackReview(task.key, task.namespace, status);
    const phase = status.phase ?? 'Pending';
    if (this.phases.get(task.key) !== phase) metrics.movePhase(task.namespace, this.phases.get(task.key), phase);
    this.phases.set(task.key, phase);
  }

  /** A released task counts no more. */
  forget(task: DesiredTask): void {
    this.totalSpent -= this.spent.get(task.key) ?? 0;
    this.spent.delete(task.key);
    this.metrics?.movePhase(task.namespace, this.phases.get(task.key), undefined);
    this.phases.delete(task.key);
    this.metrics?.leash.trackWaiting(task.key, task.namespace, undefined);
    this.metrics?.resume.trackReview(task.key, task.namespace, undefined);
  }
}
