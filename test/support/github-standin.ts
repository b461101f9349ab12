// A local stand-in for the parts of GitHub's REST API the forge layer uses, answering in the shapes GitHub
// documents (docs.github.com/rest: issues, issue comments, labels, collaborators, pulls; conditional requests
// with ETag/If-None-Match → 304; x-ratelimit-* headers, 403/429 when limited; Link pagination). GitHub
// itself is unreachable from the tests. Every request is recorded so tests can assert what Octokit sent.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  /** Path and query, as sent. */
  url: string;
  authorization: string | undefined;
  ifNoneMatch: string | undefined;
  body: unknown;
  status: number;
}

type Json = Record<string, unknown>;
/** Every stand-in PR's head commit. */
export const HEAD_SHA = 'e5bd3914e2e596debea16f433f57875b5b90bcd6';

export interface StandinIssue {
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  user: string;
  userType?: 'User' | 'Bot';
  labels: string[];
  updated_at: string;
  pull?: { head: string; base: string; draft: boolean; merged?: string };
}

export interface StandinComment {
  id: number;
  issue: number;
  user: string;
  body: string;
  created_at: string;
  updated_at: string;
}

export class GitHubStandin {
  readonly requests: Recorded[] = [];
  issues: StandinIssue[] = [];
  comments: StandinComment[] = [];
  permissions: Record<string, { permission: string; role_name: string }> = {};
  /** Set: every request is answered as rate-limited until then (primary limit: 403 and x-ratelimit-remaining 0). */
  rateLimitedUntil: Date | undefined;
  /** Set: answers 429 with this retry-after (the secondary limit). */
  retryAfterSeconds: number | undefined;
  /** Set: answers 502 like a gateway in front of an outage. */
  down = false;
  url = '';
  readonly #server = http.createServer((req, res) => this.#serve(req, res));
  readonly #token: string;
  readonly #login: string;
  readonly #repo: string;
  #clock = Date.parse('2026-11-25T10:00:00Z');
  #nextId = 1000;

  constructor(opts: { token: string; login: string; repo: string }) {
    [this.#token, this.#login, this.#repo] = [opts.token, opts.login, opts.repo];
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  /** A timestamp one second after the last: updates are ordered like GitHub's. */
  tick(): string {
    this.#clock += 1000;
    return new Date(this.#clock).toISOString().replace('.000Z', 'Z');
  }

  addIssue(issue: Partial<StandinIssue> & { title: string }): StandinIssue {
    const full: StandinIssue = {
      number: this.issues.length + 1,
      body: null,
      state: 'open',
      user: 'octocat',
      labels: [],
      updated_at: this.tick(),
      ...issue,
    };
    this.issues.push(full);
    return full;
  }

  addComment(issue: number, user: string, body: string): StandinComment {
    const at = this.tick();
    const comment = { id: this.#nextId++, issue, user, body, created_at: at, updated_at: at };
    this.comments.push(comment);
    this.#issue(issue).updated_at = at;
    return comment;
  }

  #issue(number: number): StandinIssue {
    const found = this.issues.find((i) => i.number === number);
    if (!found) throw Object.assign(new Error('Not Found'), { status: 404 });
    return found;
  }

  #serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const record: Recorded = {
        method: req.method ?? '',
        url: req.url ?? '',
        authorization: req.headers.authorization,
        ifNoneMatch: req.headers['if-none-match'] as string | undefined,
        body: raw ? JSON.parse(raw) : undefined,
        status: 0,
      };
      this.requests.push(record);
      const answer = this.#answer(record);
      record.status = answer.status;
      res.writeHead(answer.status, {
        'content-type': 'application/json; charset=utf-8',
        ...this.#rateHeaders(),
        ...answer.headers,
      });
      res.end(answer.status === 304 || answer.status === 204 ? undefined : JSON.stringify(answer.body));
    });
  }

  #rateHeaders(): Record<string, string> {
    const reset = String(Math.floor((this.rateLimitedUntil ?? new Date(this.#clock + 3600_000)).getTime() / 1000));
    return {
      'x-ratelimit-limit': '5000',
      'x-ratelimit-remaining': this.rateLimitedUntil ? '0' : '4999',
      'x-ratelimit-reset': reset,
      'x-ratelimit-resource': 'core',
    };
  }

  #answer(r: Recorded): { status: number; body?: unknown; headers?: Record<string, string> } {
    if (this.down) return { status: 502, body: { message: 'Server Error' } };
    if (r.authorization !== `token ${this.#token}` && r.authorization !== `bearer ${this.#token}`) {
      return {
        status: 401,
        body: { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' },
      };
    }
    if (this.rateLimitedUntil) {
      const doc = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';
      return { status: 403, body: { message: 'API rate limit exceeded for user ID 1.', documentation_url: doc } };
    }
    if (this.retryAfterSeconds !== undefined) {
      return {
        status: 429,
        body: { message: 'You have exceeded a secondary rate limit.' },
        headers: { 'retry-after': String(this.retryAfterSeconds) },
      };
    }
    try {
      const answer = this.#route(r);
      if (r.method !== 'GET' || answer.status !== 200) return answer;
      const etag = `W/"${createHash('sha256').update(JSON.stringify(answer.body)).digest('hex').slice(0, 32)}"`;
      if (r.ifNoneMatch === etag) return { status: 304, headers: { etag } };
      return { ...answer, headers: { ...answer.headers, etag } };
    } catch (err) {
      const status = (err as { status?: number }).status ?? 500;
      return { status, body: { message: (err as Error).message, documentation_url: 'https://docs.github.com/rest' } };
    }
  }

  #route(r: Recorded): { status: number; body?: unknown; headers?: Record<string, string> } {
    const url = new URL(r.url, 'http://stand.in');
    const q = url.searchParams;
    const p = url.pathname;
    const base = `/repos/${this.#repo}`;
    const body = (r.body ?? {}) as Json;
    let m: RegExpExecArray | null;
    const key = `${r.method} ${p.startsWith(base) ? p.slice(base.length) : p}`;
    if (key === 'GET /user') return ok(user(this.#login));
    if (key === 'GET /issues') {
      const labels = q.get('labels')?.split(',') ?? [];
      const list = this.issues
        .filter((i) => q.get('state') === 'all' || i.state === (q.get('state') ?? 'open'))
        .filter((i) => labels.every((l) => i.labels.includes(l)))
        .sort((a, b) => (q.get('direction') === 'asc' ? 1 : -1) * a.updated_at.localeCompare(b.updated_at));
      return this.#page(
        list.map((i) => this.#issueJson(i)),
        q,
        `${base}/issues`,
      );
    }
    if (key === 'GET /issues/comments') {
      const list = [...this.comments].sort(
        (a, b) => (q.get('direction') === 'asc' ? 1 : -1) * a.updated_at.localeCompare(b.updated_at),
      );
      return this.#page(
        list.map((c) => this.#commentJson(c)),
        q,
        `${base}/issues/comments`,
      );
    }
    if ((m = /^GET \/issues\/(\d+)$/.exec(key))) return ok(this.#issueJson(this.#issue(Number(m[1]))));
    if ((m = /^(GET|POST) \/issues\/(\d+)\/comments$/.exec(key))) {
      const n = Number(m[2]);
      this.#issue(n);
      if (m[1] === 'POST')
        return { status: 201, body: this.#commentJson(this.addComment(n, this.#login, String(body.body))) };
      return this.#page(
        this.comments.filter((c) => c.issue === n).map((c) => this.#commentJson(c)),
        q,
        `${base}/issues/${n}/comments`,
      );
    }
    if ((m = /^PATCH \/issues\/comments\/(\d+)$/.exec(key))) {
      const c = this.comments.find((x) => x.id === Number(m?.[1]));
      if (!c) throw Object.assign(new Error('Not Found'), { status: 404 });
      if (c.user !== this.#login)
        throw Object.assign(new Error('Must have admin rights to Repository.'), { status: 403 });
      [c.body, c.updated_at] = [String(body.body), this.tick()];
      return ok(this.#commentJson(c));
    }
    if ((m = /^GET \/collaborators\/([^/]+)\/permission$/.exec(key))) {
      const found = this.permissions[decodeURIComponent(m[1])];
      if (!found) throw Object.assign(new Error(`${m[1]} is not a user`), { status: 404 });
      return ok({ ...found, user: user(m[1]) });
    }
    if ((m = /^(GET|POST) \/issues\/(\d+)\/labels$/.exec(key))) {
      const issue = this.#issue(Number(m[2]));
      if (m[1] === 'POST') issue.labels = [...new Set([...issue.labels, ...((body.labels as string[]) ?? [])])];
      return ok(issue.labels.map(label));
    }
    if ((m = /^DELETE \/issues\/(\d+)\/labels\/(.+)$/.exec(key))) {
      const issue = this.#issue(Number(m[1]));
      const name = decodeURIComponent(m[2]);
      if (!issue.labels.includes(name)) throw Object.assign(new Error('Label does not exist'), { status: 404 });
      issue.labels = issue.labels.filter((l) => l !== name);
      return ok(issue.labels.map(label));
    }
    if (key === 'GET /pulls') {
      const head = q.get('head');
      const list = this.issues
        .filter((i) => i.pull && i.state === (q.get('state') ?? 'open'))
        .filter((i) => !head || `${this.#repo.split('/')[0]}:${i.pull?.head}` === head);
      return ok(list.map((i) => this.#pullJson(i)));
    }
    if (key === 'POST /pulls') {
      if (this.issues.some((i) => i.pull?.head === body.head && i.state === 'open')) {
        const errors = [
          { resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${body.head}.` },
        ];
        return {
          status: 422,
          body: {
            message: 'Validation Failed',
            errors,
            documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
          },
        };
      }
      const pull = { head: String(body.head), base: String(body.base), draft: body.draft === true };
      const issue = this.addIssue({
        title: String(body.title),
        body: (body.body as string) ?? null,
        user: this.#login,
        pull,
      });
      return { status: 201, body: this.#pullJson(issue) };
    }
    if ((m = /^GET \/pulls\/(\d+)$/.exec(key))) {
      const issue = this.#issue(Number(m[1]));
      if (!issue.pull) throw Object.assign(new Error('Not Found'), { status: 404 });
      return ok(this.#pullJson(issue));
    }
    if ((m = /^PUT \/pulls\/(\d+)\/merge$/.exec(key))) return this.#merge(this.#issue(Number(m[1])), body);
    if ((m = /^PATCH \/pulls\/(\d+)$/.exec(key))) {
      const issue = this.#issue(Number(m[1]));
      if (typeof body.title === 'string') issue.title = body.title;
      if (typeof body.body === 'string') issue.body = body.body;
      issue.updated_at = this.tick();
      return ok(this.#pullJson(issue));
    }
    throw Object.assign(new Error('Not Found'), { status: 404 });
  }

  #page(
    list: unknown[],
    q: URLSearchParams,
    path: string,
  ): { status: number; body: unknown; headers: Record<string, string> } {
    const perPage = Math.min(Number(q.get('per_page') ?? 30), 100);
    const page = Number(q.get('page') ?? 1);
    const last = Math.max(1, Math.ceil(list.length / perPage));
    const link = (n: number, rel: string) => {
      const next = new URLSearchParams(q);
      next.set('page', String(n));
      return `<${this.url}${path}?${next}>; rel="${rel}"`;
    };
    const links = page < last ? [link(page + 1, 'next'), link(last, 'last')] : [];
    return {
      status: 200,
      body: list.slice((page - 1) * perPage, page * perPage),
      headers: links.length ? { link: links.join(', ') } : {},
    };
  }

  #issueJson(i: StandinIssue): Json {
    const api = `${this.url}/repos/${this.#repo}/issues/${i.number}`;
    const html = `https://github.com/${this.#repo}/${i.pull ? 'pull' : 'issues'}/${i.number}`;
    const out: Json = {
      id: 1_000_000 + i.number,
      node_id: `I_${i.number}`,
      url: api,
      repository_url: `${this.url}/repos/${this.#repo}`,
      html_url: html,
      number: i.number,
      state: i.state,
      title: i.title,
      body: i.body,
      user: user(i.user, i.userType),
      labels: i.labels.map(label),
      assignee: null,
      assignees: [],
      milestone: null,
      locked: false,
      comments: this.comments.filter((c) => c.issue === i.number).length,
      created_at: '2026-11-25T09:00:00Z',
      updated_at: i.updated_at,
      closed_at: null,
      author_association: 'CONTRIBUTOR',
    };
    if (i.pull)
      out.pull_request = {
        url: `${this.url}/repos/${this.#repo}/pulls/${i.number}`,
        html_url: html,
        diff_url: `${html}.diff`,
        patch_url: `${html}.patch`,
        merged_at: null,
      };
    return out;
  }

  /** PUT …/merge as documented: 405 when it cannot be merged, 409 when `sha` is not the head; else a new commit. */
  #merge(i: StandinIssue, body: Json): { status: number; body: unknown } {
    if (!i.pull || i.state !== 'open') return { status: 405, body: { message: 'Pull Request is not mergeable' } };
    if (body.sha !== HEAD_SHA)
      return { status: 409, body: { message: 'Head branch was modified. Review and try the merge again.' } };
    i.pull.merged = createHash('sha1')
      .update(`${i.number}:${String(body.merge_method)}`)
      .digest('hex');
    i.state = 'closed';
    return { status: 200, body: { sha: i.pull.merged, merged: true, message: 'Pull Request successfully merged' } };
  }

  #pullJson(i: StandinIssue): Json {
    const { pull_request: _, ...issue } = this.#issueJson(i);
    const ref = (name: string) => ({
      label: `${this.#repo.split('/')[0]}:${name}`,
      ref: name,
      sha: HEAD_SHA,
    });
    return {
      ...issue,
      url: `${this.url}/repos/${this.#repo}/pulls/${i.number}`,
      draft: i.pull?.draft ?? false,
      merged: !!i.pull?.merged,
      merge_commit_sha: i.pull?.merged ?? null,
      head: ref(i.pull?.head ?? ''),
      base: ref(i.pull?.base ?? 'main'),
    };
  }

  #commentJson(c: StandinComment): Json {
    return {
      id: c.id,
      node_id: `IC_${c.id}`,
      url: `${this.url}/repos/${this.#repo}/issues/comments/${c.id}`,
      html_url: `https://github.com/${this.#repo}/issues/${c.issue}#issuecomment-${c.id}`,
      body: c.body,
      user: user(c.user),
      created_at: c.created_at,
      updated_at: c.updated_at,
      issue_url: `${this.url}/repos/${this.#repo}/issues/${c.issue}`,
      author_association: 'CONTRIBUTOR',
    };
  }
}

function ok(body: unknown): { status: number; body: unknown } {
  return { status: 200, body };
}

function user(login: string, type: 'User' | 'Bot' = 'User'): Json {
  return {
    login,
    id: login.length * 7919,
    node_id: `U_${login}`,
    avatar_url: '',
    url: `https://api.github.com/users/${login}`,
    type,
    site_admin: false,
  };
}

function label(name: string): Json {
  return {
    id: name.length * 31,
    node_id: `LA_${name}`,
    url: '',
    name,
    description: null,
    color: 'ededed',
    default: false,
  };
}
