// AgentBudget gauges: spend and what is left in each budget's window, and the tasks it holds. One label
// set per budget (namespace, name): budgets are few, unlike tasks.
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { AgentBudgetStatus } from '../api/agent-budget.ts';

export class BudgetMetrics {
  readonly spent: Gauge;
  readonly remaining: Gauge;
  readonly held: Gauge;
  private readonly labels = new Map<string, { namespace: string; name: string }>();

  constructor(registry: Registry) {
    const gauge = (name: string, help: string) =>
      new Gauge({ name, help, labelNames: ['namespace', 'name'], registers: [registry] });
    this.spent = gauge('episodic_budget_spent_usd', 'AgentBudget: US dollars spent in its window');
    this.remaining = gauge('episodic_budget_remaining_usd', 'AgentBudget: US dollars left in its window');
    this.held = gauge('episodic_budget_tasks_held', 'AgentBudget: tasks it keeps from starting an episode');
  }

  set(key: string, namespace: string, name: string, status: AgentBudgetStatus): void {
    const labels = { namespace, name };
    this.labels.set(key, labels);
    this.spent.set(labels, status.spentUSD);
    this.remaining.set(labels, status.remainingUSD ?? 0);
    this.held.set(labels, status.tasksHeld);
  }

  forget(key: string): void {
    const labels = this.labels.get(key);
    if (!labels) return;
    this.labels.delete(key);
    for (const g of [this.spent, this.remaining, this.held]) g.remove(labels);
  }
}
