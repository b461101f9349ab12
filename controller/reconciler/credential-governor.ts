// The quota governor (issue 29 §3): which credential of a pool a request goes out on. Pure: the gateway
// gathers each credential's facts (its own limits, what it sent in the last minute, the provider's rate-limit
// headers last seen, pauses) and carries out the choice. An episode stays on its credential while that has
// headroom, so the provider's prompt cache keeps serving it.

/** The window the spec's per-minute limits count over. */
export const LIMIT_WINDOW_MS = 60_000;
/** Below this share of headroom a sticky credential is left for a better one (prompt-cache locality gives way). */
export const STICKY_MIN_HEADROOM = 0.1;

/** What the provider's rate-limit headers said on the last answer, and until when that holds. */
export interface SeenLimits {
  requestsRemaining?: number;
  requestsLimit?: number;
  tokensRemaining?: number;
  tokensLimit?: number;
  /** When the provider's window refills; past it the figures say nothing. */
  resetAt?: Date;
}

export interface CredentialFacts {
  name: string;
  limits?: { requestsPerMinute?: number; tokensPerMinute?: number };
  /** Sent on it in the last LIMIT_WINDOW_MS: requests, tokens, and when the oldest of them leaves the window. */
  recent: { requests: number; tokens: number; oldestAt?: Date };
  seen?: SeenLimits;
  /** A usage limit (5-hour window, quota): nothing goes out on it before this. */
  pausedUntil?: Date;
  /** A 429 or overload with retry-after: a short cool-down. */
  coolUntil?: Date;
}

export type Choice =
  | { kind: 'use'; name: string }
  /** Nothing may go out now; `until` is the earliest moment one may. `paused`: every credential is at a usage limit. */
  | { kind: 'wait'; until: Date; paused: boolean }
  /** Every credential was tried for this request already. */
  | { kind: 'none' };

export interface ChoiceInput {
  credentials: readonly CredentialFacts[];
  /** The credential this episode went out on last. */
  sticky?: string;
  /** Tried for this request already (failover). */
  tried?: readonly string[];
  now: Date;
}

const fraction = (left: number, limit: number | undefined) =>
  limit === undefined || limit <= 0 ? undefined : Math.max(0, left) / limit;

/** The smallest share left of any limit known: own limits over the last minute, then the provider's own figures. */
export function headroom(c: CredentialFacts, now: Date): number {
  const shares: number[] = [];
  const own = c.limits;
  const req = own?.requestsPerMinute;
  const tok = own?.tokensPerMinute;
  if (req !== undefined) shares.push(fraction(req - c.recent.requests, req) ?? 1);
  if (tok !== undefined) shares.push(fraction(tok - c.recent.tokens, tok) ?? 1);
  const seen = c.seen;
  if (seen && (!seen.resetAt || seen.resetAt > now)) {
    if (seen.requestsRemaining !== undefined)
      shares.push(fraction(seen.requestsRemaining, seen.requestsLimit) ?? (seen.requestsRemaining > 0 ? 1 : 0));
    if (seen.tokensRemaining !== undefined)
      shares.push(fraction(seen.tokensRemaining, seen.tokensLimit) ?? (seen.tokensRemaining > 0 ? 1 : 0));
  }
  return shares.length === 0 ? 1 : Math.min(...shares);
}

/** When a credential with no headroom left gets some: its minute window moves on, or the provider's refills. */
function freesAt(c: CredentialFacts, now: Date): Date {
  const times: number[] = [];
  if (c.recent.oldestAt) times.push(c.recent.oldestAt.getTime() + LIMIT_WINDOW_MS);
  if (c.seen?.resetAt) times.push(c.seen.resetAt.getTime());
  const later = times.filter((t) => t > now.getTime());
  return new Date(later.length > 0 ? Math.min(...later) : now.getTime() + LIMIT_WINDOW_MS);
}

const blockedUntil = (c: CredentialFacts, now: Date): Date | undefined => {
  const until = [c.pausedUntil, c.coolUntil].filter((d): d is Date => d !== undefined && d > now);
  return until.length > 0 ? new Date(Math.max(...until.map((d) => d.getTime()))) : undefined;
};

/** The credential for the next request of an episode, or how long nothing may go out. */
export function chooseCredential(input: ChoiceInput): Choice {
  const { now } = input;
  const tried = new Set(input.tried ?? []);
  const untried = input.credentials.filter((c) => !tried.has(c.name));
  if (untried.length === 0) return { kind: 'none' };
  const open = untried.filter((c) => blockedUntil(c, now) === undefined);
  if (open.length === 0) {
    const until = Math.min(...untried.map((c) => (blockedUntil(c, now) as Date).getTime()));
    const paused = untried.every((c) => c.pausedUntil !== undefined && c.pausedUntil > now);
    return { kind: 'wait', until: new Date(until), paused };
  }
  const scored = open.map((c) => ({ c, room: headroom(c, now) }));
  const sticky = scored.find((s) => s.c.name === input.sticky);
  if (sticky && sticky.room >= STICKY_MIN_HEADROOM) return { kind: 'use', name: sticky.c.name };
  const withRoom = scored.filter((s) => s.room > 0);
  if (withRoom.length === 0)
    return { kind: 'wait', until: new Date(Math.min(...open.map((c) => freesAt(c, now).getTime()))), paused: false };
  // The most headroom; on a tie the one that sent least in the last minute, then the spec's order.
  let best = withRoom[0];
  for (const s of withRoom.slice(1))
    if (s.room > best.room || (s.room === best.room && s.c.recent.requests < best.c.recent.requests)) best = s;
  return { kind: 'use', name: best.c.name };
}

/** The earliest moment a pool whose every credential is paused by a usage limit may be used again. */
export function poolPausedUntil(credentials: readonly CredentialFacts[], now: Date): Date | undefined {
  if (credentials.length === 0) return undefined;
  let earliest: number | undefined;
  for (const c of credentials) {
    if (!c.pausedUntil || c.pausedUntil <= now) return undefined;
    earliest = Math.min(earliest ?? Number.POSITIVE_INFINITY, c.pausedUntil.getTime());
  }
  return earliest === undefined ? undefined : new Date(earliest);
}

/** A request waits at most this long at a time for its pool's limits to allow it; past that it is refused. */
export const MAX_LIMIT_WAIT_MS = 60_000;

/** What a request does with the governor's choice: go out, wait for a limit, give back the answer it holds, or be refused. */
export type RequestStep =
  | { kind: 'send'; name: string }
  | { kind: 'wait'; ms: number }
  /** Every credential was tried: the last answer (a 429 of the last one) goes back to the agent as it was. */
  | { kind: 'answer' }
  /** Nothing may go out soon: refused with the usage-limit answer and `until`. */
  | { kind: 'refuse'; until: Date };

/**
 * The next step of one request. A wait for per-minute limits or a cool-down (not a usage limit) of at most
 * MAX_LIMIT_WAIT_MS is waited out on the gateway's clock; with an answer held (failover) it goes back instead.
 */
export function requestStep(choice: Choice, holding: boolean, now: Date): RequestStep {
  if (choice.kind === 'use') return { kind: 'send', name: choice.name };
  if (holding) return { kind: 'answer' };
  if (choice.kind === 'none') return { kind: 'refuse', until: now };
  const ms = Math.max(0, choice.until.getTime() - now.getTime());
  if (!choice.paused && ms <= MAX_LIMIT_WAIT_MS) return { kind: 'wait', ms };
  return { kind: 'refuse', until: choice.until };
}
