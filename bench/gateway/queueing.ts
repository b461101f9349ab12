// bench/gateway's arithmetic of queueing: with N streams back to back on a CPU-bound machine, every request
// waits for the others' work (Little's law: latency = N / throughput), so the gateway's CPU per request adds
// N × cpu / cores to each one whatever the proxy does; and the CPU per request the p50 goal would need at N.

export interface Queueing {
  /** N × gateway CPU per request / cores: what the gateway adds at p50 when the cores are the bottleneck. */
  floorMs: number;
  /** The gateway CPU per request under which the floor is below the p50 goal at N streams. */
  neededUs: number;
  /** Whether the floor alone puts the goal out of reach at the measured CPU. */
  reachable: boolean;
}

export function queueing(streams: number, gatewayCpuUs: number, cores: number, goalMs: number): Queueing {
  const floorMs = (streams * gatewayCpuUs) / 1000 / cores;
  const neededUs = (goalMs * 1000 * cores) / streams;
  return { floorMs, neededUs, reachable: floorMs < goalMs };
}

/**
 * The pause after each request of a paced stream, such that N streams offer the gateway `share` of one core:
 * N requests per (pause + latency) at `gatewayCpuUs` each. Latency is left out: the pause is a bound.
 */
export function pauseForShare(streams: number, gatewayCpuUs: number, share: number): number {
  return (streams * gatewayCpuUs) / 1000 / share;
}
