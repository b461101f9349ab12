// Capability tokens: one per episode, issued when it starts and revoked when it ends. A token names the task
// and episode it was issued for, the upstream and credential it may use, and the leash on its spend; what
// the gateway metered on it is kept here until the episode's end collects it.
import { hash as digest, randomBytes } from 'node:crypto';
import { totalTokens } from '../api/bounds.ts';
import type { TokenCounts } from '../api/bounds.ts';
import type { EpisodeLeash } from '../api/episode-leash.ts';
import type { Pricing } from '../api/pricing.ts';
import { sharedSpend } from '../reconciler/spend-cap.ts';
import type { LiveSpend } from '../reconciler/spend-cap.ts';
import type { CredentialPool } from './credential-pool.ts';
import type { Provider } from './usage.ts';

/** 256 random bits, base64url: unguessable, and distinctive in the agent's environment. */
export const TOKEN_BYTES = 32;
export const TOKEN_PREFIX = 'episodic-gw-';

export interface GrantSpec {
  namespace: string;
  task: string;
  episode: number;
  provider: Provider;
  /** The fixed base URL requests go to: a request chooses a path below it, never a host. */
  upstream: string;
  /**
   * The credentials it may go out on, by name (logs, metrics) and value (never logged): one, or a pool that
   * `pool` chooses among per request (credential-pool.ts); without a pool the first is used.
   */
  credentials: ReadonlyArray<{ name: string; value: string }>;
  pool?: CredentialPool;
  pricing: Readonly<Record<string, Pricing>>;
  leash: EpisodeLeash;
  /** Called once, when the gateway first refuses a request because nothing is left. */
  onRefused?: (message: string) => void;
}

/** An episode asks for its token: the task, its AgentCredentials (spec.agent.credentials) and its leash. */
export interface GrantRequest {
  namespace: string;
  task: string;
  episode: number;
  /** spec.agent.credentials */
  credentials: string;
  leash: EpisodeLeash;
  onRefused: (message: string) => void;
}

/** What the gateway counted of one episode. */
export interface Metered {
  requests: number;
  tokens: TokenCounts;
  costUSD: number;
  /** The budget refusal, when the gateway refused a request for lack of budget. */
  refused?: string;
  /** Requests forwarded and not finished yet. */
  inFlight: number;
}

export interface Grant extends GrantSpec {
  metered: Metered;
  /** The credential the episode's last request went out on (prompt-cache locality). */
  sticky?: string;
}

/** What a token is kept (and, on a cluster, annotated on its pod) as: its SHA-256, never the token itself. */
// One-shot crypto.hash: a Hash object per lookup cost ~12 µs of the gateway's ~400 µs short request.
export const tokenHash = (token: string) => digest('sha256', token, 'base64url');
const hash = tokenHash;

const liveOf = (g: Grant): LiveSpend => ({
  task: g.task,
  episode: g.episode,
  costUSD: g.metered.costUSD,
  tokens: totalTokens(g.metered.tokens),
});

export function newMetered(): Metered {
  return { requests: 0, tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, costUSD: 0, inFlight: 0 };
}

/**
 * The episodes kept per shared cap, ended ones too: an episode started before an ended one's record was written
 * must still count it. The oldest go first; a family's cap sees far fewer episodes between two passes.
 */
export const SHARED_EPISODES_KEPT = 4096;

export class Grants {
  // Keyed by the token's hash: a lookup's timing says nothing about the tokens held.
  private readonly byHash = new Map<string, Grant>();
  /** Per shared cap (namespace and LeftOver.shared.key): the grants that spend from it, in issue order. */
  private readonly shared = new Map<string, Grant[]>();
  /** Per task, its newest grant, kept after the episode ends: its spend counts until the controller records it. */
  private readonly newestOfTask = new Map<string, Grant>();
  private readonly random: (n: number) => Buffer;

  constructor(random: (n: number) => Buffer = randomBytes) {
    this.random = random;
  }

  issue(spec: GrantSpec): string {
    const token = `${TOKEN_PREFIX}${this.random(TOKEN_BYTES).toString('base64url')}`;
    const grant: Grant = { ...spec, metered: newMetered() };
    this.byHash.set(hash(token), grant);
    this.keepNewest(grant);
    for (const key of this.sharedKeys(grant)) {
      const list = this.shared.get(key) ?? [];
      list.push(grant);
      if (list.length > SHARED_EPISODES_KEPT) list.shift();
      this.shared.set(key, list);
    }
    return token;
  }

  /** Per entry of the grant's leash.others: what the cap's other episodes spent since its snapshot. */
  sharedSpendOf(grant: Grant): Array<{ costUSD: number; tokens: number } | undefined> {
    return grant.leash.others.map((o) => {
      if (!o.shared) return undefined;
      const live = (this.shared.get(`${grant.namespace} ${o.shared.key}`) ?? []).map(liveOf);
      return sharedSpend(o.shared, grant.task, live);
    });
  }

  private sharedKeys(grant: Grant): string[] {
    return grant.leash.others.flatMap((o) => (o.shared ? [`${grant.namespace} ${o.shared.key}`] : []));
  }

  /**
   * What the gateway metered on the task's newest episode, running or just ended: between the agent's exit and
   * the pass that records it, another task's budget check must still see that spend.
   */
  liveSpend(namespace: string, task: string): LiveSpend | undefined {
    const newest = this.newestOfTask.get(`${namespace}/${task}`);
    return newest && liveOf(newest);
  }

  private keepNewest(grant: Grant): void {
    const key = `${grant.namespace}/${grant.task}`;
    this.newestOfTask.delete(key); // re-inserted last: the map's first entry is the task seen longest ago
    this.newestOfTask.set(key, grant);
    if (this.newestOfTask.size > SHARED_EPISODES_KEPT)
      this.newestOfTask.delete(this.newestOfTask.keys().next().value as string);
  }

  get(token: string): Grant | undefined {
    return this.byHash.get(hash(token));
  }

  /** The episode ended: its token is dead from now on; returns what was metered on it. */
  revoke(token: string): Metered | undefined {
    const key = hash(token);
    const grant = this.byHash.get(key);
    this.byHash.delete(key);
    return grant?.metered;
  }

  /** A restarted controller takes back the grant of a running episode, known by its token's hash alone. */
  restore(tokenSha256: string, spec: GrantSpec): void {
    if (this.byHash.has(tokenSha256)) return;
    const grant = { ...spec, metered: newMetered() };
    this.byHash.set(tokenSha256, grant);
    this.keepNewest(grant);
  }

  hasHash(tokenSha256: string): boolean {
    return this.byHash.has(tokenSha256);
  }

  /** As revoke, by the token's hash. */
  revokeHash(tokenSha256: string): Metered | undefined {
    const grant = this.byHash.get(tokenSha256);
    this.byHash.delete(tokenSha256);
    return grant?.metered;
  }

  get size(): number {
    return this.byHash.size;
  }
}
