// The merge queue's metrics (spec.integrate): integrations by result, resolution episodes, rebases, the
// tasks waiting and how long an integration took from its first rebase to its push. Labelled by queue, and on
// a cluster by namespace too (a queue is per namespace there); locally there is no namespace label.
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';

export class MergeQueueMetrics {
  readonly integrations: Counter;
  readonly resolutionEpisodes: Counter;
  readonly rebases: Counter;
  readonly waiting: Gauge;
  readonly seconds: Histogram;

  constructor(registry: Registry) {
    this.integrations = new Counter({
      name: 'episodic_merge_queue_integrations_total',
      help: 'Tasks the merge queue finished, by result (integrated, needsReview)',
      labelNames: ['namespace', 'queue', 'result'],
      registers: [registry],
    });
    this.resolutionEpisodes = new Counter({
      name: 'episodic_merge_queue_resolution_episodes_total',
      help: 'Resolution episodes started for a conflict or a failing queue gate',
      labelNames: ['namespace', 'queue', 'why'],
      registers: [registry],
    });
    this.rebases = new Counter({
      name: 'episodic_merge_queue_rebases_total',
      help: 'Rebases onto into, by outcome (clean, conflict)',
      labelNames: ['namespace', 'queue', 'outcome'],
      registers: [registry],
    });
    this.waiting = new Gauge({
      name: 'episodic_merge_queue_waiting',
      help: 'Tasks in the queue, the one integrating included',
      labelNames: ['namespace', 'queue'],
      registers: [registry],
    });
    this.seconds = new Histogram({
      name: 'episodic_merge_queue_integration_seconds',
      help: 'From the first rebase to into fast-forwarded',
      labelNames: ['namespace', 'queue'],
      buckets: [0.1, 0.5, 1, 5, 30, 120, 600, 3600],
      registers: [registry],
    });
  }
}
