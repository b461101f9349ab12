// Exponential backoff with "equal jitter": half the delay is fixed, half random, so retries
// spread out (no thundering herd after a 529) but never collapse to zero.
import type { AgentTaskSpec } from '../api/agent-task.ts';

/**
 * @param attempt 1 for the first retry.
 * @param jitter a number in [0, 1); the caller supplies it so the reconciler stays pure.
 */
export function backoffMs(backoff: AgentTaskSpec['backoff'], attempt: number, jitter: number): number {
  const exponent = Math.max(0, attempt - 1);
  const raw = backoff.initialSeconds * backoff.factor ** exponent;
  const capped = Math.min(raw, backoff.maxSeconds);
  const withJitter = capped / 2 + (capped / 2) * clamp01(jitter);
  return Math.round(withJitter * 1000);
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(Math.max(x, 0), 1) : 0;
}
