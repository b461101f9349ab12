// Small typed wrappers over Gitea's REST API (/api/v1, as documented in its swagger) for tests; Node's fetch.
// Only the fields the tests read are typed. Tokens travel in the Authorization header only.
import { randomBytes } from 'node:crypto';

export interface GiteaUser {
  id: number;
  login: string;
  is_admin?: boolean;
}

/** A user created through the admin API, with its password and an all-scopes token. */
export interface GiteaAccount {
  name: string;
  password: string;
  token: string;
}

export interface GiteaRepo {
  id: number;
  name: string;
  full_name: string;
  owner: GiteaUser;
  clone_url: string;
  html_url: string;
  default_branch: string;
}

export interface GiteaBranch {
  name: string;
  commit: { id: string; message: string };
}

export interface GiteaLabel {
  id: number;
  name: string;
  color: string;
}

export interface GiteaIssue {
  id: number;
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  user: GiteaUser;
  labels: GiteaLabel[];
  comments: number;
  html_url: string;
  created_at: string;
  updated_at: string;
}

export interface GiteaPull {
  number: number;
  title: string;
  body: string;
  html_url: string;
  state: string;
  head: { ref: string; sha: string };
  base: { ref: string };
}

export interface GiteaComment {
  id: number;
  body: string;
  user: GiteaUser;
  issue_url: string;
  created_at: string;
  updated_at: string;
}

export interface GiteaPermission {
  permission: 'none' | 'read' | 'write' | 'admin' | 'owner';
  role_name: string;
  user: GiteaUser;
}

export interface GiteaHook {
  id: number;
  type: string;
  events: string[];
  active: boolean;
  config: Record<string, string>;
}

export interface RequestOptions {
  /** Defaults to the admin token; `null` for an anonymous request. */
  token?: string | null;
  /** Basic auth instead of a token (token creation needs the user's password). */
  basic?: { user: string; password: string };
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
}

export class GiteaApiError extends Error {
  readonly status: number;

  constructor(status: number, method: string, apiPath: string, detail: string) {
    super(`gitea ${method} ${apiPath} -> ${status}: ${detail.slice(0, 500)}`);
    this.status = status;
  }
}

export class GiteaApi {
  readonly url: string;
  readonly #adminToken: string;

  constructor(url: string, adminToken: string) {
    this.url = url;
    this.#adminToken = adminToken;
  }

  /** The raw Response of an API call (for headers and status); throws on a network error only. */
  async request(method: string, apiPath: string, opts: RequestOptions = {}): Promise<Response> {
    const url = new URL(`/api/v1${apiPath}`, this.url);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
    const token = opts.token === undefined ? this.#adminToken : opts.token;
    if (opts.basic) {
      headers.authorization = `Basic ${Buffer.from(`${opts.basic.user}:${opts.basic.password}`).toString('base64')}`;
    } else if (token) headers.authorization = `token ${token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    return fetch(url, { method, headers, body, signal: AbortSignal.timeout(30_000) });
  }

  /** An API call whose JSON answer is returned; a non-2xx status throws GiteaApiError. */
  async api<T>(method: string, apiPath: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, apiPath, opts);
    const text = await res.text();
    if (!res.ok) throw new GiteaApiError(res.status, method, apiPath, text);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** A user (admin API), its password, and an all-scopes token of its own. */
  async createUser(name: string): Promise<GiteaAccount> {
    const password = randomBytes(18).toString('base64url');
    await this.api('POST', '/admin/users', {
      body: { username: name, email: `${name}@example.invalid`, password, must_change_password: false },
    });
    const token = await this.api<{ sha1: string }>('POST', `/users/${name}/tokens`, {
      basic: { user: name, password },
      body: { name: `episodic-${randomBytes(4).toString('hex')}`, scopes: ['all'] },
    });
    return { name, password, token: token.sha1 };
  }

  /** An empty repo owned by `owner` (created by the admin on its behalf). */
  createRepo(owner: string, name: string, opts: { private?: boolean; autoInit?: boolean } = {}): Promise<GiteaRepo> {
    return this.api<GiteaRepo>('POST', `/admin/users/${owner}/repos`, {
      body: { name, private: opts.private ?? false, auto_init: opts.autoInit ?? false, default_branch: 'main' },
    });
  }

  addCollaborator(owner: string, repo: string, user: string, permission: 'read' | 'write' | 'admin'): Promise<void> {
    return this.api('PUT', `/repos/${owner}/${repo}/collaborators/${user}`, { body: { permission } });
  }

  permission(owner: string, repo: string, user: string, token?: string): Promise<GiteaPermission> {
    return this.api<GiteaPermission>('GET', `/repos/${owner}/${repo}/collaborators/${user}/permission`, { token });
  }

  createLabel(owner: string, repo: string, name: string, color = '#e11d21'): Promise<GiteaLabel> {
    return this.api<GiteaLabel>('POST', `/repos/${owner}/${repo}/labels`, { body: { name, color } });
  }

  createIssue(
    owner: string,
    repo: string,
    issue: { title: string; body?: string; labels?: number[] },
    token?: string,
  ): Promise<GiteaIssue> {
    return this.api<GiteaIssue>('POST', `/repos/${owner}/${repo}/issues`, { body: issue, token });
  }

  getIssue(owner: string, repo: string, number: number, token?: string): Promise<GiteaIssue> {
    return this.api<GiteaIssue>('GET', `/repos/${owner}/${repo}/issues/${number}`, { token });
  }

  /** `query` as in the API: state, labels (names, comma-separated), since/before (RFC 3339), type, page, limit. */
  listIssues(owner: string, repo: string, query: RequestOptions['query'] = {}, token?: string): Promise<GiteaIssue[]> {
    return this.api<GiteaIssue[]>('GET', `/repos/${owner}/${repo}/issues`, { query, token });
  }

  comment(owner: string, repo: string, number: number, body: string, token?: string): Promise<GiteaComment> {
    return this.api<GiteaComment>('POST', `/repos/${owner}/${repo}/issues/${number}/comments`, {
      body: { body },
      token,
    });
  }

  editComment(owner: string, repo: string, id: number, body: string, token?: string): Promise<GiteaComment> {
    return this.api<GiteaComment>('PATCH', `/repos/${owner}/${repo}/issues/comments/${id}`, { body: { body }, token });
  }

  listComments(owner: string, repo: string, number: number, token?: string): Promise<GiteaComment[]> {
    return this.api<GiteaComment[]>('GET', `/repos/${owner}/${repo}/issues/${number}/comments`, { token });
  }

  /** The token's user's fork of owner/repo. */
  fork(owner: string, repo: string, token: string): Promise<GiteaRepo> {
    return this.api<GiteaRepo>('POST', `/repos/${owner}/${repo}/forks`, { body: {}, token });
  }

  /** Branch `branch` off `from` with one commit adding `file` (a PR needs a difference to be opened). */
  async commitOnNewBranch(owner: string, repo: string, opts: { branch: string; from: string; file: string }) {
    await this.api('POST', `/repos/${owner}/${repo}/contents/${opts.file}`, {
      body: {
        content: Buffer.from(`${opts.file}\n`).toString('base64'),
        branch: opts.from,
        new_branch: opts.branch,
        message: `add ${opts.file}`,
      },
    });
  }

  createPull(
    owner: string,
    repo: string,
    pull: { head: string; base: string; title: string; labels?: number[] },
    token?: string,
  ): Promise<GiteaPull> {
    return this.api<GiteaPull>('POST', `/repos/${owner}/${repo}/pulls`, { body: pull, token });
  }

  /** Open and closed. */
  listPulls(owner: string, repo: string): Promise<GiteaPull[]> {
    return this.api<GiteaPull[]>('GET', `/repos/${owner}/${repo}/pulls`, { query: { state: 'all' } });
  }

  listBranches(owner: string, repo: string): Promise<GiteaBranch[]> {
    return this.api<GiteaBranch[]>('GET', `/repos/${owner}/${repo}/branches`);
  }

  /** A webhook of type "gitea" posting JSON to `url`, signed with `secret`. */
  createWebhook(
    owner: string,
    repo: string,
    hook: { url: string; secret: string; events?: string[] },
    token?: string,
  ): Promise<GiteaHook> {
    return this.api<GiteaHook>('POST', `/repos/${owner}/${repo}/hooks`, {
      token,
      body: {
        type: 'gitea',
        active: true,
        events: hook.events ?? ['issues', 'issue_comment', 'pull_request'],
        config: { url: hook.url, content_type: 'json', secret: hook.secret },
      },
    });
  }

  /**
   * The branch once Gitea has processed the push that made it: a push is acknowledged before Gitea's queue
   * updates the repo, and meanwhile the API answers 409 "empty", or 500 (a nil-pointer panic in Gitea 1.26's
   * GetBranch while the repo is still marked empty).
   */
  async waitForBranch(owner: string, repo: string, branch: string, timeoutMs = 30_000): Promise<GiteaBranch> {
    const apiPath = `/repos/${owner}/${repo}/branches/${branch}`;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await this.request('GET', apiPath);
      if (res.ok) return (await res.json()) as GiteaBranch;
      const detail = await res.text();
      if (Date.now() > deadline) throw new GiteaApiError(res.status, 'GET', apiPath, detail);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The HTTP clone URL of a repo, without credentials (see gitAuthEnv). */
  cloneUrl(owner: string, repo: string): string {
    return `${this.url}/${owner}/${repo}.git`;
  }
}

/**
 * Environment for `git` talking to this Gitea as `user` with `token`: the credential rides in an
 * http.extraHeader set through GIT_CONFIG_* variables, so it is in neither argv, a URL, a file nor git's
 * output. Merge it over process.env.
 */
export function gitAuthEnv(user: string, token: string): Record<string, string> {
  const basic = Buffer.from(`${user}:${token}`).toString('base64');
  return {
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
}
