// episodic_forge_requests_total on a registry of the test's own, behind the ForgeRequestCounter port the forge
// clients count through (in the controller the trigger metrics implement it).
import { Counter, type Registry } from 'prom-client';
import type { ForgeRequestCounter } from '../../controller/forge/types.ts';
import type { ForgeKind } from '../../controller/api/forge-item.ts';

export function forgeCounter(registry: Registry): ForgeRequestCounter {
  const counter = new Counter({
    name: 'episodic_forge_requests_total',
    help: 'Requests to forges by HTTP status',
    labelNames: ['forge', 'code'],
    registers: [registry],
  });
  return { forgeRequest: (forge: ForgeKind, code: string) => counter.inc({ forge, code }) };
}
