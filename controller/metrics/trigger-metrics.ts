// Trigger metrics: tasks created per trigger and forge requests by answer code. The runner reports through
// the small TriggerCounters port, so it runs (and is tested) without prom-client loaded.
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';

export interface TriggerCounters {
  taskCreated(namespace: string, trigger: string): void;
  /** `code`: the HTTP status, or "error" when no answer came (network, timeout). */
  forgeRequest(forge: string, code: string): void;
}

export class TriggerMetrics implements TriggerCounters {
  readonly created: Counter;
  readonly forgeRequests: Counter;

  constructor(registry: Registry) {
    this.created = new Counter({
      name: 'episodic_trigger_tasks_created_total',
      help: 'AgentTasks created by AgentTriggers',
      labelNames: ['namespace', 'trigger'],
      registers: [registry],
    });
    this.forgeRequests = new Counter({
      name: 'episodic_forge_requests_total',
      help: 'Requests to forge APIs by triggers, by forge and HTTP status (error: no answer)',
      labelNames: ['forge', 'code'],
      registers: [registry],
    });
  }

  taskCreated(namespace: string, trigger: string): void {
    this.created.inc({ namespace, trigger });
  }

  forgeRequest(forge: string, code: string): void {
    this.forgeRequests.inc({ forge, code });
  }
}
