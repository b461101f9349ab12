// The Gitea (and Forgejo) forge over its REST API (/api/v1, Gitea 1.26) with Node's fetch.
// Gitea sends no ETag on issue lists, so polls narrow with since= (inclusive, one-second resolution: the
// caller dedupes by number and updatedAt); labels= is sent but also checked here, because Gitea drops
// names it does not know and, with none left, returns every issue. See docs/gitea-for-tests.md.
import { fetchRetryingStale, forgeError, rateLimitReset, splitRepo } from './http.ts';
import {
  type ApiComment,
  type ApiIssue,
  parseComment,
  parseIssue,
  parseMergeState,
  parsePull,
  parsePullRef,
} from './shapes.ts';
import type {
  Forge,
  ForgePermission,
  ForgeRequestCounter,
  ListCommentsQuery,
  ListItemsQuery,
  Listed,
  PullMergeAnswer,
  PullMergeState,
  PullRequestInput,
  PullRequestRef,
  ReportComment,
} from './types.ts';
import type { ForgeComment, ForgeItem } from '../api/forge-item.ts';
import {
  ForgeRateLimitedError,
  ForgeRequestError,
  closingBody,
  hasLabels,
  refusal,
  reportBody,
  reportMarker,
} from './types.ts';

export interface GiteaForgeOptions {
  /** The server, e.g. https://gitea.example.com (the API is under /api/v1). */
  apiURL: string;
  repo: string;
  /** Without one, anonymous reads (a public repo); reports need one. */
  token?: string;
  /** Counts every answer (episodic_forge_requests_total). */
  metrics?: ForgeRequestCounter;
  now?: () => Date;
  timeoutMs?: number;
  /** How long ensurePullRequest retries Gitea's 409/500 answers right after a push. */
  pushSettleMs?: number;
}

interface Answer {
  status: number;
  body: unknown;
  total: number | undefined;
}

type Query = Record<string, string | number | undefined>;

const PAGE = 50; // Gitea's default [api] MAX_RESPONSE_ITEMS: a larger limit is cut to it anyway
const MAX_PAGES = 200;
/** What Gitea answers a new PR while its queue still processes the push (measured: 404, 409, 500). */
const SETTLING = [404, 409, 500];
const GITEA_ROLES: Record<string, ForgePermission | undefined> = {
  read: 'read',
  write: 'write',
  admin: 'admin',
  owner: 'admin',
};

export class GiteaForge implements Forge {
  readonly kind = 'gitea' as const;
  readonly repo: string;
  readonly #api: string;
  readonly #repoPath: string;
  readonly #token: string;
  readonly #opts: GiteaForgeOptions;
  #me: string | undefined;

  constructor(opts: GiteaForgeOptions) {
    const { owner, name } = splitRepo(opts.repo);
    this.repo = opts.repo;
    this.#api = `${opts.apiURL.replace(/\/+$/, '')}/api/v1`;
    this.#repoPath = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}`;
    this.#token = opts.token ?? '';
    this.#opts = opts;
  }

  async whoami(): Promise<string> {
    this.#me ??= ((await this.#call('GET', '/user')).body as { login: string }).login;
    return this.#me;
  }

  async listItems(query: ListItemsQuery): Promise<Listed<ForgeItem>> {
    const type = query.kind === 'pullRequests' ? 'pulls' : 'issues';
    const labels = query.labels?.length ? query.labels.join(',') : undefined;
    const listed = await this.#listAll<ApiIssue>(`${this.#repoPath}/issues`, {
      state: 'open',
      type,
      labels,
      since: query.since,
    });
    if (listed.kind !== 'listed') return listed;
    const items = listed.entries.map(parseIssue).filter((i) => i.open && hasLabels(i.labels, query.labels));
    return { kind: 'listed', entries: items.filter((i) => i.isPullRequest === (query.kind === 'pullRequests')) };
  }

  async listComments(query: ListCommentsQuery): Promise<Listed<ForgeComment>> {
    const where =
      query.number === undefined
        ? `${this.#repoPath}/issues/comments`
        : `${this.#repoPath}/issues/${query.number}/comments`;
    const listed = await this.#listAll<ApiComment>(where, { since: query.since });
    if (listed.kind !== 'listed') return listed;
    return { kind: 'listed', entries: listed.entries.map((c) => parseComment(c, query.number)) };
  }

  async permission(user: string): Promise<ForgePermission | undefined> {
    const path = `${this.#repoPath}/collaborators/${encodeURIComponent(user)}/permission`;
    const answer = await this.#call('GET', path, { accept: [403, 404] });
    // Gitea shows another user's role only to a repo admin: a 403 is this token's rights, not the user's.
    if (answer.status === 403) {
      throw new ForgeRequestError(
        "gitea: reading another user's permission needs a token of a repo admin (a write token reads only its own)",
        403,
      );
    }
    if (answer.status !== 200) return undefined;
    return GITEA_ROLES[(answer.body as { permission: string }).permission];
  }

  async upsertReport(number: number, key: string, body: string): Promise<ReportComment> {
    const me = await this.whoami();
    const text = reportBody(key, body);
    const marker = reportMarker(key);
    const listed = await this.#listAll<ApiComment>(`${this.#repoPath}/issues/${number}/comments`, {});
    if (listed.kind === 'rateLimited') throw new ForgeRateLimitedError('gitea rate limit', listed.resetAt);
    const mine =
      listed.kind === 'listed'
        ? listed.entries.find((c) => c.user?.login === me && (c.body ?? '').includes(marker))
        : undefined;
    if (mine?.body === text) return { id: mine.id, action: 'unchanged' };
    if (mine) {
      await this.#call('PATCH', `${this.#repoPath}/issues/comments/${mine.id}`, { body: { body: text } });
      return { id: mine.id, action: 'updated' };
    }
    const created = await this.#call('POST', `${this.#repoPath}/issues/${number}/comments`, { body: { body: text } });
    return { id: (created.body as { id: number }).id, action: 'created' };
  }

  async swapLabels(number: number, change: { add?: string[]; remove?: string[] }): Promise<string[]> {
    const ids = await this.#labelIds([...(change.add ?? [])]);
    const issueLabels = `${this.#repoPath}/issues/${number}/labels`;
    const add = (change.add ?? []).map((l) => ids.get(l.toLowerCase())).filter((id) => id !== undefined);
    if (add.length > 0) await this.#call('POST', issueLabels, { body: { labels: add } });
    for (const name of change.remove ?? []) {
      const id = ids.get(name.toLowerCase());
      if (id !== undefined) await this.#call('DELETE', `${issueLabels}/${id}`, { accept: [404] });
    }
    const now = await this.#call('GET', issueLabels);
    return (now.body as Array<{ name: string }>).map((l) => l.name);
  }

  async ensurePullRequest(input: PullRequestInput): Promise<PullRequestRef> {
    const title = input.draft ? `WIP: ${input.title}` : input.title;
    const body = closingBody(input.body, input.closes);
    const deadline = this.#now().getTime() + (this.#opts.pushSettleMs ?? 15_000);
    // Right after a push Gitea answers 404, 409 ("empty repo") or 500 until its queue catches up; 409 is also
    // its "a PR for this head exists" (a race with another writer), so every attempt looks for it first.
    for (;;) {
      try {
        return await this.#findOrCreatePull(input, title, body);
      } catch (err) {
        const status = (err as { status?: number }).status;
        if (!SETTLING.includes(status ?? 0) || this.#now().getTime() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  async getItem(number: number): Promise<ForgeItem> {
    return parseIssue((await this.#call('GET', `${this.#repoPath}/issues/${number}`)).body);
  }

  async getPullRequest(number: number): Promise<ForgeItem> {
    return parsePull((await this.#call('GET', `${this.#repoPath}/pulls/${number}`)).body);
  }

  async pullMergeState(number: number): Promise<PullMergeState> {
    return parseMergeState((await this.#call('GET', `${this.#repoPath}/pulls/${number}`)).body);
  }

  /** Fast-forward only (so `into` gets the queue's rebased commit itself), once Gitea has checked the head. */
  async mergePullRequest(number: number, head: string): Promise<PullMergeAnswer> {
    await this.#headChecked(number, head);
    try {
      const body = { Do: 'fast-forward-only', head_commit_id: head };
      await this.#call('POST', `${this.#repoPath}/pulls/${number}/merge`, { body });
    } catch (err) {
      if (giteaStillChecking(err)) throw err; // not a refusal: the queue's next pass merges it
      return refusal(err);
    }
    return { kind: 'merged', commit: head };
  }

  /** Gitea re-checks a PR in a queue after a push to its head and refuses a merge until then ("try again later"). */
  async #headChecked(number: number, head: string): Promise<void> {
    const deadline = this.#now().getTime() + (this.#opts.pushSettleMs ?? 15_000);
    for (;;) {
      const pull = await this.pullMergeState(number);
      if (pull.state !== 'open' || (pull.head === head && pull.mergeable)) return;
      if (this.#now().getTime() > deadline) return; // the merge call then says why
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  async waitForBranch(branch: string, timeoutMs = 30_000): Promise<void> {
    const deadline = this.#now().getTime() + timeoutMs;
    const path = `${this.#repoPath}/branches/${branch.split('/').map(encodeURIComponent).join('/')}`;
    for (;;) {
      const answer = await this.#call('GET', path, { accept: [404, 409, 500] });
      if (answer.status === 200) return;
      if (this.#now().getTime() > deadline) {
        throw forgeError('gitea', `GET ${path}`, answer.status, 'the pushed branch never appeared', this.#token);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async #findOrCreatePull(input: PullRequestInput, title: string, body: string): Promise<PullRequestRef> {
    const head = input.head.split('/').map(encodeURIComponent).join('/');
    const found = await this.#call('GET', `${this.#repoPath}/pulls/${encodeURIComponent(input.base)}/${head}`, {
      accept: [404],
    });
    const pull = found.status === 200 ? parsePullRef(found.body) : undefined;
    if (pull && pull.state === 'open') {
      if (pull.title === title && (pull.body ?? '') === body)
        return { number: pull.number, url: pull.html_url, action: 'unchanged' };
      await this.#call('PATCH', `${this.#repoPath}/pulls/${pull.number}`, { body: { title, body } });
      return { number: pull.number, url: pull.html_url, action: 'updated' };
    }
    const created = await this.#call('POST', `${this.#repoPath}/pulls`, {
      body: { head: input.head, base: input.base, title, body },
    });
    const made = parsePullRef(created.body);
    return { number: made.number, url: made.html_url, action: 'created' };
  }

  /** Label names (lower case) → ids, creating the wanted ones the repo lacks. */
  async #labelIds(wanted: string[]): Promise<Map<string, number>> {
    const listed = await this.#listAll<{ id: number; name: string }>(`${this.#repoPath}/labels`, {});
    const ids = new Map<string, number>();
    if (listed.kind === 'rateLimited') throw new ForgeRateLimitedError('gitea rate limit', listed.resetAt);
    if (listed.kind === 'listed') for (const l of listed.entries) ids.set(l.name.toLowerCase(), l.id);
    for (const name of wanted) {
      if (ids.has(name.toLowerCase())) continue;
      const made = await this.#call('POST', `${this.#repoPath}/labels`, { body: { name, color: '#ededed' } });
      ids.set(name.toLowerCase(), (made.body as { id: number }).id);
    }
    return ids;
  }

  /**
   * Every page of a list (X-Total-Count ends it: one item's comments come whole, page and limit ignored). A
   * rate limit becomes a result; the pages read so far are dropped (asked again).
   */
  async #listAll<T>(path: string, query: Query): Promise<Listed<T>> {
    const entries: T[] = [];
    try {
      for (let page = 1; page <= MAX_PAGES; page++) {
        const answer = await this.#call('GET', path, { query: { ...query, limit: PAGE, page } });
        const batch = answer.body as T[];
        entries.push(...batch);
        if (batch.length < PAGE || (answer.total !== undefined && entries.length >= answer.total)) break;
      }
    } catch (err) {
      if (err instanceof ForgeRateLimitedError) return { kind: 'rateLimited', resetAt: err.resetAt };
      throw err;
    }
    return { kind: 'listed', entries };
  }

  async #call(
    method: string,
    path: string,
    opts: { query?: Query; body?: unknown; accept?: number[] } = {},
  ): Promise<Answer> {
    const url = new URL(`${this.#api}${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#token) headers.authorization = `token ${this.#token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const what = `${method} ${path}`;
    let res: Response;
    try {
      res = await fetchRetryingStale(url, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(this.#opts.timeoutMs ?? 30_000),
      });
    } catch (err) {
      this.#opts.metrics?.forgeRequest('gitea', 'error');
      throw forgeError('gitea', what, undefined, (err as Error).message, this.#token);
    }
    this.#opts.metrics?.forgeRequest('gitea', String(res.status));
    const text = await res.text();
    if (!res.ok && !opts.accept?.includes(res.status)) {
      const resetAt = rateLimitReset(res.status, (h) => res.headers.get(h), this.#now());
      throw forgeError('gitea', what, res.status, text, this.#token, resetAt);
    }
    const total = res.headers.get('x-total-count');
    return { status: res.status, body: parseJson(text), total: total ? Number(total) : undefined };
  }

  #now(): Date {
    return this.#opts.now?.() ?? new Date();
  }
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text; // a proxy's HTML error page
  }
}

/**
 * Gitea's 405 "Please try again later": the PR is still being checked after a push to its head (its
 * mergeability not settled when #headChecked gave up, or settled and queued again), not a refusal.
 */
export function giteaStillChecking(err: unknown): boolean {
  return err instanceof ForgeRequestError && err.status === 405 && /please try again later/i.test(err.message);
}
