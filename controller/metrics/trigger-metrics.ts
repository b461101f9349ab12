// Trigger metrics: tasks created per trigger, forge requests by answer code and webhook deliveries by result. The runner reports through
// the small TriggerCounters port, so it runs (and is tested) without prom-client loaded.
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';

export interface TriggerCounters {
  taskCreated(namespace: string, trigger: string): void;
  /** `code`: the HTTP status, or "error" when no answer came (network, timeout). */
  forgeRequest(forge: string, code: string): void;
  /** `forge`: the known trigger's forge, or "unknown"; `result`: hook-server.ts's fixed DeliveryResult set. */
  webhookDelivery(forge: string, result: string): void;
}

export class TriggerMetrics implements TriggerCounters {
  readonly created: Counter;
  readonly forgeRequests: Counter;
  readonly webhookDeliveries: Counter;

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
    this.webhookDeliveries = new Counter({
      name: 'episodic_webhook_deliveries_total',
      help: 'Webhook deliveries answered, by forge (unknown: no such trigger) and result',
      labelNames: ['forge', 'result'],
      registers: [registry],
    });
  }

  taskCreated(namespace: string, trigger: string): void {
    this.created.inc({ namespace, trigger });
  }

  forgeRequest(forge: string, code: string): void {
    this.forgeRequests.inc({ forge, code });
  }

  webhookDelivery(forge: string, result: string): void {
    this.webhookDeliveries.inc({ forge, result });
  }
}
