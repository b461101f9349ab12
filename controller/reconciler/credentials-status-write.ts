// When an AgentCredentials' status is written (issue 29 §3): counters change with every request, so their
// writes are coalesced to at most one per interval; a pause beginning or ending is written at once, since a
// restart must find it. One write at a time per AgentCredentials either way. Pure: the loop gives the facts.

/** Counters (requests, tokens) reach the status at most this often per AgentCredentials. */
export const CREDENTIALS_STATUS_INTERVAL_MS = 5_000;

export interface StatusWriteFacts {
  /** A pause began or ended since the last write. */
  urgent: boolean;
  /** A write of this AgentCredentials is in flight: the next one waits for it. */
  inFlight: boolean;
  /** When the last write started (ms), if any. */
  lastAt?: number;
  now: number;
  intervalMs?: number;
}

/** `wait`: none now (the loop asks again when the write in flight ends); else write after `delayMs`. */
export function statusWriteDelay(f: StatusWriteFacts): { kind: 'wait' } | { kind: 'write'; delayMs: number } {
  if (f.inFlight) return { kind: 'wait' };
  if (f.urgent || f.lastAt === undefined) return { kind: 'write', delayMs: 0 };
  const interval = f.intervalMs ?? CREDENTIALS_STATUS_INTERVAL_MS;
  return { kind: 'write', delayMs: Math.max(0, f.lastAt + interval - f.now) };
}
