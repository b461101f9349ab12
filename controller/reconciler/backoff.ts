// A task's retry delay after a failed episode: its spec.backoff, in seconds, through the one retry rule.
import type { AgentTaskSpec } from '../api/agent-task.ts';
import { retryDelayMs } from '../util/retry-delay.ts';

/**
 * @param attempt 1 for the first retry.
 * @param jitter a number in [0, 1); the caller supplies it so the reconciler stays pure.
 */
export function backoffMs(backoff: AgentTaskSpec['backoff'], attempt: number, jitter: number): number {
  const { initialSeconds, factor, maxSeconds } = backoff;
  return retryDelayMs({ initialMs: initialSeconds * 1000, factor, maxMs: maxSeconds * 1000 }, attempt, jitter);
}
