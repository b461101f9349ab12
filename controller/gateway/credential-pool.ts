// One AgentCredentials' pool as the gateway sees it: per credential, what went out in the last minute, the
// provider's rate-limit figures last seen, its pause (a usage limit, until the reset) or cool-down (a 429),
// its totals and last error. The choice itself is the governor's (reconciler/credential-governor.ts); this
// holds the facts it is given. Names only: a credential's value is never here.
import { LIMIT_WINDOW_MS, chooseCredential, poolPausedUntil } from '../reconciler/credential-governor.ts';
import type { Choice, CredentialFacts, SeenLimits } from '../reconciler/credential-governor.ts';
import type { Signal } from './upstream-signals.ts';

export interface PoolMember {
  name: string;
  limits?: { requestsPerMinute?: number; tokensPerMinute?: number };
}

/** AgentCredentials.status.credentials[] (api/agent-credentials.ts). */
export interface CredentialState {
  name: string;
  state: 'Ready' | 'Paused' | 'Missing';
  pausedUntil?: string;
  requests: number;
  tokens: number;
  lastError?: string;
}

interface Sent {
  at: number;
  tokens: number;
}

interface Member extends PoolMember {
  window: Sent[];
  seen?: SeenLimits;
  pausedUntil?: Date;
  coolUntil?: Date;
  requests: number;
  tokens: number;
  lastError?: string;
}

export class CredentialPool {
  private members = new Map<string, Member>();
  private readonly onPause?: () => void;

  /** `restored`: the status kept from before (a restart keeps pauses and totals); `onPause`: a pause began or ended. */
  constructor(members: readonly PoolMember[], restored: readonly CredentialState[] = [], onPause?: () => void) {
    this.onPause = onPause;
    this.update(members);
    for (const r of restored) {
      const m = this.members.get(r.name);
      if (!m) continue;
      const until = r.pausedUntil ? new Date(r.pausedUntil) : undefined;
      Object.assign(m, { requests: r.requests, tokens: r.tokens, lastError: r.lastError });
      if (until && !Number.isNaN(until.getTime())) m.pausedUntil = until;
    }
  }

  /** The spec changed: credentials come and go; what is known of those that stay is kept. */
  update(members: readonly PoolMember[]): void {
    const next = new Map<string, Member>();
    for (const p of members) {
      const had = this.members.get(p.name);
      next.set(p.name, had ? { ...had, limits: p.limits } : { ...p, window: [], requests: 0, tokens: 0 });
    }
    this.members = next;
  }

  facts(now: Date, only?: readonly string[]): CredentialFacts[] {
    const from = now.getTime() - LIMIT_WINDOW_MS;
    const out: CredentialFacts[] = [];
    for (const m of this.members.values()) {
      if (only && !only.includes(m.name)) continue;
      m.window = m.window.filter((s) => s.at > from);
      out.push({
        name: m.name,
        limits: m.limits,
        recent: {
          requests: m.window.length,
          tokens: m.window.reduce((t, s) => t + s.tokens, 0),
          oldestAt: m.window.length > 0 ? new Date(m.window[0].at) : undefined,
        },
        seen: m.seen,
        pausedUntil: m.pausedUntil,
        coolUntil: m.coolUntil,
      });
    }
    return out;
  }

  /** The governor's choice among `usable` (those whose value the controller has). */
  choose(usable: readonly string[], sticky: string | undefined, tried: readonly string[], now: Date): Choice {
    return chooseCredential({ credentials: this.facts(now, usable), sticky, tried, now });
  }

  /** A request went out on `name`: it counts against its minute; its tokens are added once it is metered. */
  sent(name: string, now: Date): (tokens: number) => void {
    const m = this.members.get(name);
    if (!m) return () => {};
    const entry = { at: now.getTime(), tokens: 0 };
    m.window.push(entry);
    m.requests++;
    return (tokens) => {
      entry.tokens += tokens;
      m.tokens += tokens;
    };
  }

  /** What the answer said of the credential: its figures, and a pause or cool-down. */
  answered(name: string, signal: Signal, seen: SeenLimits | undefined, now: Date): void {
    const m = this.members.get(name);
    if (!m) return;
    if (seen) m.seen = seen;
    if (signal.kind === 'retry') {
      m.coolUntil = signal.until;
      m.lastError = signal.error;
    } else if (signal.kind === 'usage-limit') {
      m.pausedUntil = signal.resetAt;
      m.lastError = signal.error;
      this.onPause?.();
    } else if (signal.kind === 'ok' && m.pausedUntil && m.pausedUntil <= now) {
      m.pausedUntil = undefined;
      this.onPause?.();
    }
  }

  /** Every credential is at a usage limit: the earliest reset. */
  pausedUntil(now: Date): Date | undefined {
    return poolPausedUntil(this.facts(now), now);
  }

  status(now: Date, missing: ReadonlySet<string> = new Set()): CredentialState[] {
    return [...this.members.values()].map((m) => {
      const paused = m.pausedUntil && m.pausedUntil > now ? m.pausedUntil : undefined;
      const state = missing.has(m.name) ? 'Missing' : paused ? 'Paused' : 'Ready';
      return {
        name: m.name,
        state,
        ...(paused ? { pausedUntil: paused.toISOString() } : {}),
        requests: m.requests,
        tokens: m.tokens,
        ...(m.lastError ? { lastError: m.lastError } : {}),
      };
    });
  }
}
