// The model gateway's counters (issue 29 §3): answers per credential by status code, tokens per credential by
// kind, cost per namespace, and which credentials are paused. Labels are credential and AgentCredentials
// names: never a value, never a task.
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';

const KINDS = ['input', 'output', 'cacheRead', 'cacheWrite'] as const;

export class GatewayMetrics {
  readonly requests: Counter;
  readonly tokens: Counter;
  readonly cost: Counter;
  readonly paused: Gauge;
  /** The label sets set on `paused` per pool, to drop those of a credential that left it. */
  private readonly pausedLabels = new Map<string, Array<{ credentials: string; credential: string }>>();

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'episodic_gateway_requests_total',
      help: 'Model gateway: answers from upstream by provider, credential and HTTP status (failed-over ones too)',
      labelNames: ['provider', 'credential', 'code'],
      registers: [registry],
    });
    this.tokens = new Counter({
      name: 'episodic_gateway_tokens_total',
      help: 'Model gateway: tokens metered by provider, credential and kind (input, output, cacheRead, cacheWrite)',
      labelNames: ['provider', 'credential', 'kind'],
      registers: [registry],
    });
    this.cost = new Counter({
      name: 'episodic_gateway_cost_usd_total',
      help: 'Model gateway: US dollars metered, by namespace',
      labelNames: ['namespace'],
      registers: [registry],
    });
    this.paused = new Gauge({
      name: 'episodic_credential_paused',
      help: 'Model gateway: 1 while a credential of an AgentCredentials is paused by a usage limit',
      labelNames: ['credentials', 'credential'],
      registers: [registry],
    });
  }

  answered(who: { provider: string }, credential: string, status: number): void {
    this.requests.inc({ provider: who.provider, credential, code: String(status) });
  }

  used(
    who: { provider: string; namespace: string },
    credential: string,
    tokens: Record<(typeof KINDS)[number], number>,
    costUSD: number,
  ): void {
    for (const kind of KINDS)
      if (tokens[kind] > 0) this.tokens.inc({ provider: who.provider, credential, kind }, tokens[kind]);
    if (costUSD > 0) this.cost.inc({ namespace: who.namespace }, costUSD);
  }

  /** `key`: the pool's namespace/name; `credentials`: its name (the label). */
  setPaused(key: string, credentials: string, states: ReadonlyArray<{ name: string; state: string }>): void {
    for (const labels of this.pausedLabels.get(key) ?? []) this.paused.remove(labels);
    const labels = states.map((s) => ({ credentials, credential: s.name }));
    for (const [i, s] of states.entries()) this.paused.set(labels[i], s.state === 'Paused' ? 1 : 0);
    this.pausedLabels.set(key, labels);
  }
}
