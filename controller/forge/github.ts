// The GitHub forge through Octokit. Polls ask the same URL every time (open items sorted by updated_at,
// newest first, no since= in the query) with the ETag of its last answer: a poll with nothing new is one
// request answered 304, which GitHub does not count against the rate limit. Pages are read only while
// items are at least as new as `since`. Rate-limit answers become a `rateLimited` result (the reset time
// from x-ratelimit-reset or retry-after); outages a ForgeUnavailableError.
import { Octokit } from '@octokit/rest';
import { fetchRetryingStale, forgeError, pathOnly, rateLimitReset, splitRepo } from './http.ts';
import { parseComment, parseIssue, parseMergeState, parsePull, parsePullRef } from './shapes.ts';
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
  FORGE_PERMISSIONS,
  ForgeRateLimitedError,
  closingBody,
  hasLabels,
  refusal,
  reportBody,
  reportMarker,
} from './types.ts';

export interface GitHubForgeOptions {
  /** https://api.github.com, or GitHub Enterprise's https://HOST/api/v3. */
  apiURL?: string;
  repo: string;
  /** Without one, anonymous reads (a public repo, 60 requests an hour); reports need one. */
  token?: string;
  /** The token's login when GET /user is not allowed (a GitHub App installation token). */
  login?: string;
  /** Counts every answer (episodic_forge_requests_total). */
  metrics?: ForgeRequestCounter;
  now?: () => Date;
  timeoutMs?: number;
}

type Raw = Record<string, unknown>;
interface Page {
  status: number;
  data: unknown;
  headers: Record<string, string | number | undefined>;
}
interface ErrorLike {
  status?: number;
  message?: string;
  response?: { headers?: Record<string, string | number | undefined> };
}

const PER_PAGE = 100;
const MAX_PAGES = 100;
/** One per polled URL: a few per trigger, and per-item comment lists. */
const MAX_ETAGS = 1000;
const SILENT = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export class GitHubForge implements Forge {
  readonly kind = 'github' as const;
  readonly repo: string;
  readonly #octokit: Octokit;
  readonly #owner: string;
  readonly #name: string;
  readonly #token: string;
  readonly #opts: GitHubForgeOptions;
  /** URL → the ETag of its last 200: the If-None-Match of the next poll. */
  readonly #etags = new Map<string, string>();
  #me: string | undefined;

  constructor(opts: GitHubForgeOptions) {
    const { owner, name } = splitRepo(opts.repo);
    [this.repo, this.#owner, this.#name, this.#token, this.#opts] = [opts.repo, owner, name, opts.token ?? '', opts];
    this.#me = opts.login;
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const counted: typeof fetch = async (input, init) => {
      try {
        const res = await fetchRetryingStale(input, {
          ...init,
          signal: init?.signal ?? AbortSignal.timeout(timeoutMs),
        });
        opts.metrics?.forgeRequest('github', String(res.status));
        return res;
      } catch (err) {
        opts.metrics?.forgeRequest('github', 'error');
        throw err;
      }
    };
    this.#octokit = new Octokit({
      auth: opts.token || undefined,
      baseUrl: (opts.apiURL ?? 'https://api.github.com').replace(/\/+$/, ''),
      userAgent: 'episodic-triggers',
      log: SILENT,
      request: { fetch: counted },
    });
  }

  async whoami(): Promise<string> {
    this.#me ??= ((await this.#call('GET /user', {})).data as { login: string }).login;
    return this.#me;
  }

  async listItems(query: ListItemsQuery): Promise<Listed<ForgeItem>> {
    const labels = query.labels?.length ? query.labels.join(',') : undefined;
    const params = { state: 'open', sort: 'updated', direction: 'desc', labels };
    const listed = await this.#pollNewest('GET /repos/{owner}/{repo}/issues', params, query.since);
    if (listed.kind !== 'listed') return listed;
    const items = listed.entries.map(parseIssue).filter((i) => i.open && hasLabels(i.labels, query.labels));
    return { kind: 'listed', entries: items.filter((i) => i.isPullRequest === (query.kind === 'pullRequests')) };
  }

  async listComments(query: ListCommentsQuery): Promise<Listed<ForgeComment>> {
    const listed =
      query.number === undefined
        ? await this.#pollNewest(
            'GET /repos/{owner}/{repo}/issues/comments',
            { sort: 'updated', direction: 'desc' },
            query.since,
          )
        : await this.#pollNewest('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
            issue_number: query.number,
          });
    if (listed.kind !== 'listed') return listed;
    const comments = listed.entries.map((c) => parseComment(c, query.number));
    const since = query.since ? Date.parse(query.since) : Number.NEGATIVE_INFINITY;
    return {
      kind: 'listed',
      entries: comments.filter((c) => Date.parse(c.updatedAt) >= since).sort((a, b) => a.id - b.id),
    };
  }

  async permission(user: string): Promise<ForgePermission | undefined> {
    const answer = await this.#call(
      'GET /repos/{owner}/{repo}/collaborators/{username}/permission',
      { username: user },
      [404],
    );
    if (answer.status !== 200) return undefined;
    const { permission, role_name } = answer.data as { permission?: string; role_name?: string };
    const known = (r: string | undefined) => FORGE_PERMISSIONS.find((p) => p === r);
    return known(role_name) ?? known(permission);
  }

  async upsertReport(number: number, key: string, body: string): Promise<ReportComment> {
    const me = await this.whoami();
    const text = reportBody(key, body);
    const marker = reportMarker(key);
    const comments = await this.#all('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      issue_number: number,
    });
    const mine = comments.find((c) => (c.user as Raw | null)?.login === me && String(c.body ?? '').includes(marker));
    if (mine?.body === text) return { id: Number(mine.id), action: 'unchanged' };
    if (mine) {
      await this.#call('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', { comment_id: mine.id, body: text });
      return { id: Number(mine.id), action: 'updated' };
    }
    const made = await this.#call('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      issue_number: number,
      body: text,
    });
    return { id: Number((made.data as Raw).id), action: 'created' };
  }

  async swapLabels(number: number, change: { add?: string[]; remove?: string[] }): Promise<string[]> {
    const route = '/repos/{owner}/{repo}/issues/{issue_number}/labels';
    let now = (await this.#call(`GET ${route}`, { issue_number: number })).data as Raw[];
    // GitHub creates a label it does not know when it is added.
    if (change.add?.length)
      now = (await this.#call(`POST ${route}`, { issue_number: number, labels: change.add })).data as Raw[];
    const have = new Set(now.map((l) => String(l.name).toLowerCase()));
    for (const name of change.remove ?? []) {
      if (!have.has(name.toLowerCase())) continue;
      const answer = await this.#call(`DELETE ${route}/{name}`, { issue_number: number, name }, [404]);
      if (answer.status === 200) now = answer.data as Raw[];
    }
    return now.map((l) => String(l.name));
  }

  async ensurePullRequest(input: PullRequestInput): Promise<PullRequestRef> {
    const body = closingBody(input.body, input.closes);
    const found = await this.#openPull(input.head);
    if (found) {
      const pull = parsePullRef(found);
      if (pull.title === input.title && (pull.body ?? '') === body)
        return { number: pull.number, url: pull.html_url, action: 'unchanged' };
      await this.#call('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
        pull_number: pull.number,
        title: input.title,
        body,
      });
      return { number: pull.number, url: pull.html_url, action: 'updated' };
    }
    const params = { head: input.head, base: input.base, title: input.title, body, draft: input.draft ?? false };
    const made = await this.#call('POST /repos/{owner}/{repo}/pulls', params, [422]);
    if (made.status === 422) {
      // "A pull request already exists": another writer won the race; that one is ours to update.
      const raced = await this.#openPull(input.head);
      if (!raced)
        throw forgeError('github', 'POST /pulls', 422, String((made.data as Raw)?.message ?? ''), this.#token);
      return this.ensurePullRequest(input);
    }
    const pull = parsePullRef(made.data);
    return { number: pull.number, url: pull.html_url, action: 'created' };
  }

  async getItem(number: number): Promise<ForgeItem> {
    return parseIssue(
      (await this.#call('GET /repos/{owner}/{repo}/issues/{issue_number}', { issue_number: number })).data,
    );
  }

  async getPullRequest(number: number): Promise<ForgeItem> {
    return parsePull((await this.#call('GET /repos/{owner}/{repo}/pulls/{pull_number}', { pull_number: number })).data);
  }

  /** GitHub's API sees a branch once the push has returned. */
  async pullMergeState(number: number): Promise<PullMergeState> {
    const route = 'GET /repos/{owner}/{repo}/pulls/{pull_number}';
    return parseMergeState((await this.#call(route, { pull_number: number })).data);
  }

  /** A rebase merge (no merge commit; GitHub writes new commits) if the head is still `head`: 405/409 refuse. */
  async mergePullRequest(number: number, head: string): Promise<PullMergeAnswer> {
    try {
      const route = 'PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge';
      const answer = await this.#call(route, { pull_number: number, merge_method: 'rebase', sha: head });
      const sha = (answer.data as { sha?: unknown } | undefined)?.sha;
      return { kind: 'merged', ...(typeof sha === 'string' && /^[0-9a-f]{40,64}$/.test(sha) ? { commit: sha } : {}) };
    } catch (err) {
      return refusal(err);
    }
  }

  async waitForBranch(): Promise<void> {}

  async #openPull(head: string): Promise<Raw | undefined> {
    const answer = await this.#call('GET /repos/{owner}/{repo}/pulls', {
      state: 'open',
      head: `${this.#owner}:${head}`,
    });
    return (answer.data as Raw[])[0];
  }

  /**
   * The newest-first list at a fixed URL, conditional on its last ETag; further pages only while the last
   * entry is at least as new as `since`. 304 → unchanged.
   */
  async #pollNewest(route: string, params: Raw, since?: string): Promise<Listed<Raw>> {
    const key = `${route} ${JSON.stringify(params)}`;
    const etag = this.#etags.get(key);
    const first = await this.#call(
      route,
      { ...params, per_page: PER_PAGE, headers: etag ? { 'if-none-match': etag } : {} },
      [304],
    ).catch((err: unknown) => (err instanceof ForgeRateLimitedError ? err : Promise.reject(err)));
    if (first instanceof ForgeRateLimitedError) return { kind: 'rateLimited', resetAt: first.resetAt };
    if (first.status === 304) return { kind: 'unchanged' };
    const entries = [...(first.data as Raw[])];
    const sinceMs = since ? Date.parse(since) : Number.NEGATIVE_INFINITY;
    let page = first;
    for (let n = 2; n <= MAX_PAGES && hasNext(page) && newest(entries.at(-1)) >= sinceMs; n++) {
      page = await this.#call(route, { ...params, per_page: PER_PAGE, page: n });
      entries.push(...(page.data as Raw[]));
    }
    // Remembered only once every page was read: a failure mid-way must not turn the next poll into a 304.
    if (typeof first.headers.etag === 'string') this.#remember(key, first.headers.etag);
    return { kind: 'listed', entries: entries.filter((e) => newest(e) >= sinceMs) };
  }

  #remember(key: string, etag: string): void {
    this.#etags.delete(key);
    this.#etags.set(key, etag);
    const oldest = this.#etags.keys().next().value;
    if (this.#etags.size > MAX_ETAGS && oldest !== undefined) this.#etags.delete(oldest);
  }

  async #all(route: string, params: Raw): Promise<Raw[]> {
    const entries: Raw[] = [];
    let page: Page | undefined;
    for (let n = 1; n <= MAX_PAGES && (!page || hasNext(page)); n++) {
      page = await this.#call(route, { ...params, per_page: PER_PAGE, page: n });
      entries.push(...(page.data as Raw[]));
    }
    return entries;
  }

  /** One request; statuses in `accept` are answers, every other failure a typed error without the token. */
  async #call(route: string, params: Raw, accept: number[] = []): Promise<Page> {
    try {
      const where = route.includes('{owner}') ? { owner: this.#owner, repo: this.#name } : {};
      const res = await this.#octokit.request(route, { ...where, ...params });
      return { status: res.status, data: res.data, headers: res.headers as Page['headers'] };
    } catch (err) {
      const e = err as ErrorLike;
      if (e.status !== undefined && accept.includes(e.status)) {
        return {
          status: e.status,
          data: (err as { response?: { data?: unknown } }).response?.data,
          headers: e.response?.headers ?? {},
        };
      }
      const headers = e.response?.headers ?? {};
      const get = (name: string) => (headers[name] === undefined ? undefined : String(headers[name]));
      const resetAt = e.status === undefined ? undefined : rateLimitReset(e.status, get, this.#now());
      // Octokit reports a network failure as status 500: either way an outage.
      return Promise.reject(
        forgeError('github', pathOnly(route), e.status, e.message ?? 'request failed', this.#token, resetAt),
      );
    }
  }

  #now(): Date {
    return this.#opts.now?.() ?? new Date();
  }
}

function hasNext(page: Page): boolean {
  return /rel="next"/.test(String(page.headers.link ?? ''));
}

function newest(entry: Raw | undefined): number {
  return entry ? Date.parse(String(entry.updated_at ?? '')) : Number.NEGATIVE_INFINITY;
}
