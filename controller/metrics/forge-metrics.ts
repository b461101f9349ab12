// Forge requests, counted by the forge clients (controller/forge/) as each answer arrives; the code label is
// bounded (HTTP statuses and "error"), never a URL or a repo.
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';
import type { ForgeKind } from '../forge/types.ts';

/** `episodic_forge_requests_total{forge,code}`: code is the HTTP status, or "error" when none came back. */
export class ForgeMetrics {
  readonly requests: Counter;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'episodic_forge_requests_total',
      help: 'Requests to forges (GitHub, Gitea), by HTTP status ("error": no answer)',
      labelNames: ['forge', 'code'],
      registers: [registry],
    });
  }

  count(forge: ForgeKind, code: number | 'error'): void {
    this.requests.inc({ forge, code: String(code) });
  }
}
