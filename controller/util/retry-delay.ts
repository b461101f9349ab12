// Exponential backoff with "equal jitter", written once for every retry: a task's failed episodes, a key
// whose reconcile threw, a watch that broke, a status or record write the API server refused. Half the
// delay is fixed and half random, so retries spread out (no thundering herd) but never collapse to zero.

export interface RetryBackoff {
  /** The delay before the first retry, in ms. */
  initialMs: number;
  /** Each retry waits this many times longer than the one before. */
  factor: number;
  /** No retry waits longer. */
  maxMs: number;
}

/** Requests to the API server (a broken watch, a refused write): 200 ms, doubling, at most 30 s. */
export const API_RETRY: RetryBackoff = { initialMs: 200, factor: 2, maxMs: 30_000 };

/**
 * @param attempt 1 for the first retry.
 * @param jitter a number in [0, 1]: the caller supplies it (Math.random(), or 1 for no jitter) so this stays pure.
 */
export function retryDelayMs(backoff: RetryBackoff, attempt: number, jitter: number): number {
  const exponent = Math.max(0, attempt - 1);
  const capped = Math.min(backoff.initialMs * backoff.factor ** exponent, backoff.maxMs);
  return Math.round(capped / 2 + (capped / 2) * clamp01(jitter));
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(Math.max(x, 0), 1) : 0;
}
