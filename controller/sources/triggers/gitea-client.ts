// The few Gitea (and Forgejo) REST calls a trigger's poll needs, on Node's fetch. Gitea 1.26 sends no ETag
// on issue lists, so a poll is conditional by `since=` instead: only items updated at or after the newest
// one seen (a comment bumps updated_at), so "nothing changed" costs one request answered `[]`. The token
// travels in the Authorization header only; errors name the method, path and status, never the token.
import { createHash } from 'node:crypto';
import type { Permission } from '../../api/agent-trigger.ts';
import type { ForgeComment, ForgeItem } from '../../forge/types.ts';
import type { TriggerCounters } from '../../metrics/trigger-metrics.ts';

/** Gitea caps `limit` at [api] MAX_RESPONSE_ITEMS, 50 by default. */
const PAGE_SIZE = 50;
/** At most this many pages per list: 5,000 items per poll; the rest come next poll (the cursor stays). */
const MAX_PAGES = 100;
const REQUEST_TIMEOUT_MS = 30_000;

export class ForgeError extends Error {
  override name = 'ForgeError';
  readonly status: number | undefined;
  /** When the forge said to come back (rate limit), if it did. */
  readonly retryAt: Date | undefined;

  constructor(message: string, status?: number, retryAt?: Date) {
    super(message);
    this.status = status;
    this.retryAt = retryAt;
  }
}

interface RawUser {
  login: string;
  type?: string;
}
interface RawIssue {
  number: number;
  title: string;
  body: string | null;
  html_url: string;
  state: string;
  user: RawUser;
  labels: Array<{ name: string }> | null;
  comments?: number;
  updated_at: string;
  pull_request?: unknown;
}
interface RawComment {
  id: number;
  body: string;
  user: RawUser;
  created_at: string;
  updated_at: string;
}

export interface PolledItem {
  item: ForgeItem;
  updatedAt: string;
  /** Number, labels, state and comment count: a change within updated_at's one second still shows. */
  fingerprint: string;
}

export class GiteaClient {
  private readonly base: string;
  private readonly token: string | undefined;
  private readonly counters: TriggerCounters | undefined;
  private readonly now: () => Date;

  constructor(opts: { apiURL: string; token?: string; counters?: TriggerCounters; now?: () => Date }) {
    this.base = `${opts.apiURL.replace(/\/+$/, '')}/api/v1`;
    this.token = opts.token;
    this.counters = opts.counters;
    this.now = opts.now ?? (() => new Date());
  }

  /** The token's own user: its comments (reports back) never trigger. */
  async self(): Promise<string | undefined> {
    if (!this.token) return undefined;
    return (await this.get<RawUser>('/user')).login;
  }

  /** Open issues (or pull requests) updated at or after `since`, oldest update first. */
  async openItems(repo: string, kind: 'issues' | 'pullRequests', since?: string): Promise<PolledItem[]> {
    const query: Record<string, string> = { state: 'open', type: kind === 'issues' ? 'issues' : 'pulls' };
    if (since) query.since = since;
    const raw = await this.pages<RawIssue>(`/repos/${repo}/issues`, query);
    return raw
      .map((i) => ({ item: toItem(i), updatedAt: i.updated_at, fingerprint: fingerprint(i) }))
      .sort((a, b) => a.updatedAt.localeCompare(b.updatedAt));
  }

  async comments(repo: string, number: number, since?: string): Promise<ForgeComment[]> {
    const raw = await this.pages<RawComment>(`/repos/${repo}/issues/${number}/comments`, since ? { since } : {});
    return raw.map((c) => ({
      id: c.id,
      itemNumber: number,
      author: c.user.login,
      authorIsBot: isBot(c.user),
      body: c.body ?? '',
      createdAt: c.created_at,
      updatedAt: c.updated_at,
    }));
  }

  /** A comment on the item; its id. */
  async createComment(repo: string, number: number, body: string): Promise<number> {
    return (await this.send<RawComment>('POST', `/repos/${repo}/issues/${number}/comments`, { body })).id;
  }

  async editComment(repo: string, id: number, body: string): Promise<void> {
    await this.send('PATCH', `/repos/${repo}/issues/comments/${id}`, { body });
  }

  /** The user's permission on the repo; none for a stranger (Gitea answers 403/404 for non-collaborators). */
  async permission(repo: string, user: string): Promise<Permission | undefined> {
    try {
      const p = await this.get<{ permission: string }>(
        `/repos/${repo}/collaborators/${encodeURIComponent(user)}/permission`,
      );
      if (p.permission === 'owner') return 'admin';
      return (['read', 'write', 'admin'] as const).find((k) => k === p.permission);
    } catch (err) {
      if (err instanceof ForgeError && (err.status === 403 || err.status === 404)) return undefined;
      throw err;
    }
  }

  private async pages<T>(path: string, query: Record<string, string>): Promise<T[]> {
    const out: T[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const batch = await this.get<T[]>(path, { ...query, limit: String(PAGE_SIZE), page: String(page) });
      out.push(...batch);
      if (batch.length < PAGE_SIZE) break;
    }
    return out;
  }

  private get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
    const url = `${path}${Object.keys(query).length ? `?${new URLSearchParams(query)}` : ''}`;
    return this.send<T>('GET', url);
  }

  private async send<T>(method: string, path: string, body?: unknown): Promise<T> {
    const what = `${method} ${path.split('?')[0]}`;
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(this.token ? { authorization: `token ${this.token}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      this.counters?.forgeRequest('gitea', 'error');
      throw new ForgeError(`${what}: ${(err as Error).message}`);
    }
    this.counters?.forgeRequest('gitea', String(res.status));
    if (res.ok) return (await res.json()) as T;
    await res.body?.cancel();
    throw new ForgeError(`${what}: HTTP ${res.status}`, res.status, retryAt(res.headers, this.now()));
  }
}

/** Retry-After (seconds or a date), or an exhausted X-RateLimit-Remaining with its reset (epoch seconds). */
export function retryAt(headers: Headers, now: Date): Date | undefined {
  const after = headers.get('retry-after');
  if (after) {
    const seconds = Number(after);
    const at = Number.isFinite(seconds) ? new Date(now.getTime() + seconds * 1000) : new Date(after);
    if (!Number.isNaN(at.getTime())) return at;
  }
  const reset = Number(headers.get('x-ratelimit-reset'));
  if (headers.get('x-ratelimit-remaining') === '0' && reset > 0) return new Date(reset * 1000);
  return undefined;
}

function fingerprint(i: RawIssue): string {
  const labels = createHash('sha256')
    .update(
      (i.labels ?? [])
        .map((l) => l.name)
        .sort()
        .join('\n'),
    )
    .digest('hex')
    .slice(0, 12);
  return `${i.number}:${i.state}:${i.comments ?? 0}:${labels}`;
}

function isBot(user: RawUser): boolean {
  return user.type === 'Bot' || /\[bot\]$/i.test(user.login);
}

function toItem(i: RawIssue): ForgeItem {
  return {
    number: i.number,
    title: i.title,
    body: i.body ?? '',
    url: i.html_url,
    author: i.user.login,
    authorIsBot: isBot(i.user),
    labels: (i.labels ?? []).map((l) => l.name),
    open: i.state === 'open',
    isPullRequest: Boolean(i.pull_request),
    updatedAt: i.updated_at,
  };
}
