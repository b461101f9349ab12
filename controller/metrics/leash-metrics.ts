// The leash's metrics: circuit-breaker transitions, and tasks waiting by why they wait. Both are read off
// the statuses the loop records (before → after), so local and cluster mode count the same way.
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { AgentTaskStatus } from '../api/agent-task.ts';

export interface BreakerTransition {
  to: 'Closed' | 'HalfOpen' | 'Open';
  /** noProgress, sameError (the rule that moved it); progress (closed again); reopened (Open → HalfOpen by a spec edit or a resume); reset. */
  rule: string;
}

/** The breaker's move between two statuses of one task, if it moved. */
export function breakerTransition(
  before: AgentTaskStatus | undefined,
  after: AgentTaskStatus,
): BreakerTransition | undefined {
  const from = before?.breaker?.state ?? 'Closed';
  const to = after.breaker?.state ?? 'Closed';
  if (from === to) return undefined;
  if (to === 'Open') return { to, rule: after.breaker?.trippedBy ?? 'unknown' };
  if (to === 'HalfOpen') return { to, rule: from === 'Open' ? 'reopened' : 'noProgress' };
  return { to, rule: from === 'HalfOpen' ? 'progress' : 'reset' };
}

export class LeashMetrics {
  readonly breakerTransitions: Counter;
  readonly waiting: Gauge;
  /** Per task: the namespace and reason it is counted under while Waiting. */
  private readonly waitingTasks = new Map<string, { namespace: string; reason: string }>();

  constructor(registry: Registry) {
    this.breakerTransitions = new Counter({
      name: 'episodic_breaker_transitions_total',
      help: 'Circuit-breaker transitions, by the state entered and the rule that moved it',
      labelNames: ['namespace', 'to', 'rule'],
      registers: [registry],
    });
    this.waiting = new Gauge({
      name: 'episodic_tasks_waiting',
      help: 'Tasks in phase Waiting, by reason (Backoff, UsageLimit, BudgetWindow, RateLimited…)',
      labelNames: ['namespace', 'reason'],
      registers: [registry],
    });
  }

  observeBreaker(namespace: string, before: AgentTaskStatus | undefined, after: AgentTaskStatus): void {
    const t = breakerTransition(before, after);
    if (t) this.breakerTransitions.inc({ namespace, to: t.to, rule: t.rule });
  }

  /** The task's current status (undefined: it is gone); moves it between the waiting reasons. */
  trackWaiting(key: string, namespace: string, status: AgentTaskStatus | undefined): void {
    const was = this.waitingTasks.get(key);
    const now = status?.phase === 'Waiting' ? { namespace, reason: status.reason ?? 'Unknown' } : undefined;
    if (was?.namespace === now?.namespace && was?.reason === now?.reason) return;
    if (was) this.waiting.dec(was);
    if (now) this.waiting.inc(now);
    if (now) this.waitingTasks.set(key, now);
    else this.waitingTasks.delete(key);
  }
}
