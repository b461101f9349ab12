// The forge layer's contract: what a trigger asks of GitHub or Gitea. The item and comment shapes both polls
// and webhooks produce are api/forge-item.ts's (the reconciler's trigger rules use them too).
import { LINE_MAX, cleanName, clip, oneLine } from '../api/bounds.ts';
import type { ForgeComment, ForgeItem, ForgeKind, PermissionAnswer } from '../api/forge-item.ts';
import { REPORT_MARKER_PREFIX } from '../api/forge-item.ts';

/** Repo roles, weakest first (GitHub's names; Gitea's owner counts as admin). */
export const FORGE_PERMISSIONS = ['read', 'triage', 'write', 'maintain', 'admin'] as const;
export type ForgePermission = (typeof FORGE_PERMISSIONS)[number];

/** Untrusted text is cut to these lengths before anything else sees it. */
export const TITLE_MAX = 256;
export const BODY_MAX = 16_384;
export const NAME_MAX = 100;
export const LABELS_MAX = 50;

/**
 * Where clients count each answer: `episodic_forge_requests_total{forge,code}` (the trigger metrics implement
 * it; one registration per registry). `code` is the HTTP status, or "error" when none came back.
 */
export interface ForgeRequestCounter {
  forgeRequest(forge: ForgeKind, code: string): void;
}

export interface ListItemsQuery {
  kind: 'issues' | 'pullRequests';
  /** All of them must be on an item (also checked client-side: Gitea drops unknown names from its filter). */
  labels?: string[];
  /** Only items updated at or after this time (RFC 3339). */
  since?: string;
}

export interface ListCommentsQuery {
  /** One item's comments; without it, the whole repo's (one request for every item a poll watches). */
  number?: number;
  since?: string;
}

/**
 * What a list call saw. `unchanged`: GitHub answered 304 to the stored ETag (one request, nothing new).
 * `rateLimited`: nothing was read; ask again at `resetAt` (the forge's reset time, not a guess).
 */
export type Listed<T> =
  | { kind: 'listed'; entries: T[] }
  | { kind: 'unchanged' }
  | { kind: 'rateLimited'; resetAt: Date };

export interface ReportComment {
  id: number;
  action: 'created' | 'updated' | 'unchanged';
}

export interface PullRequestInput {
  /** The branch with the work, in the same repo (e.g. episodic/42). */
  head: string;
  base: string;
  title: string;
  body: string;
  /** The issue the PR closes: `Closes #N` is added to the body unless it already says so. */
  closes?: number;
  draft?: boolean;
}

export interface PullRequestRef {
  number: number;
  url: string;
  action: 'created' | 'updated' | 'unchanged';
}

/** A pull request as the merge queue sees it: where it stands, its head, and what its base got when merged. */
export interface PullMergeState {
  state: 'open' | 'closed' | 'merged';
  head?: string;
  /** The forge's own answer (Gitea: false while it is still checking a push). */
  mergeable?: boolean;
  mergeCommit?: string;
}

/** A merge call's answer: a refusal (closed, not mergeable, head moved: 405/409/422) is an answer, not an error. */
export type PullMergeAnswer = { kind: 'merged'; commit?: string } | { kind: 'refused'; reason: string };

export interface Forge {
  readonly kind: ForgeKind;
  /** OWNER/NAME */
  readonly repo: string;
  /** The login the token belongs to (its own comments are the only ones it edits); needs a token. */
  whoami(): Promise<string>;
  listItems(query: ListItemsQuery): Promise<Listed<ForgeItem>>;
  listComments(query: ListCommentsQuery): Promise<Listed<ForgeComment>>;
  /** The user's role on the repo; undefined when they have none. */
  permission(user: string): Promise<ForgePermission | undefined>;
  /** The one comment on the item carrying the hidden marker of `key`, created once and edited in place after. */
  upsertReport(number: number, key: string, body: string): Promise<ReportComment>;
  /** Adds and removes labels (missing ones are created on Gitea; removing an absent one is fine). */
  swapLabels(number: number, change: { add?: string[]; remove?: string[] }): Promise<string[]>;
  /** The open PR for `head`, updated to this title/body, or a new one: never a second PR for a head. */
  ensurePullRequest(input: PullRequestInput): Promise<PullRequestRef>;
  /** One issue (or pull request, as an issue): a report's PR title is the item's title now. */
  getItem(number: number): Promise<ForgeItem>;
  /** A pull request with its own branch (`headBranch`): a PR item's work is pushed there. */
  getPullRequest(number: number): Promise<ForgeItem>;
  pullMergeState(number: number): Promise<PullMergeState>;
  /**
   * Merges the PR without a merge commit (Gitea: fast-forward-only; GitHub: rebase) if its head is still `head`.
   * Outages and rate limits throw (the queue retries); a refusal's reason names no token.
   */
  mergePullRequest(number: number, head: string): Promise<PullMergeAnswer>;
  /** Resolves once the forge's API sees the pushed branch (Gitea answers 409/500 for a moment after a push). */
  waitForBranch(branch: string, timeoutMs?: number): Promise<void>;
}

/**
 * The user's role as an answer: a lookup the forge refuses (Gitea shows another user's role only to a repo
 * admin) or fails is `unknown` with why, holding only what needs it; a rate limit still throws (wait the reset).
 */
export async function readPermission(forge: Pick<Forge, 'permission'>, user: string): Promise<PermissionAnswer> {
  try {
    return await forge.permission(user);
  } catch (err) {
    if (err instanceof ForgeRateLimitedError) throw err;
    const who = cleanName(user, NAME_MAX);
    return { unknown: clip(oneLine(`cannot read ${who}'s permission: ${(err as Error).message}`), LINE_MAX) };
  }
}

/** The forge did not answer usefully (network error, timeout, 5xx): back off and poll again, nothing was lost. */
export class ForgeUnavailableError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.name = 'ForgeUnavailableError';
    this.status = status;
  }
}

/** A write was refused for the rate limit; retry at resetAt. (List calls return `rateLimited` instead.) */
export class ForgeRateLimitedError extends Error {
  readonly resetAt: Date;
  constructor(message: string, resetAt: Date) {
    super(message);
    this.name = 'ForgeRateLimitedError';
    this.resetAt = resetAt;
  }
}

/** The forge refused the request (401, 403, 404, 422…): retrying the same request will not help. */
export class ForgeRequestError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.name = 'ForgeRequestError';
    this.status = status;
  }
}

/** A refused request as a merge answer; anything else (outage, rate limit) is rethrown. */
export function refusal(err: unknown): PullMergeAnswer {
  if (!(err instanceof ForgeRequestError)) throw err;
  return { kind: 'refused', reason: clip(oneLine(err.message), LINE_MAX) };
}

/** The hidden marker that finds a report comment again. `key` is ours (e.g. the task name), never item text. */
export function reportMarker(key: string): string {
  return `${REPORT_MARKER_PREFIX}${cleanName(key, 200, { slash: true })} -->`;
}

/** The body a report comment is written with: the marker first, then the text. */
export function reportBody(key: string, body: string): string {
  return `${reportMarker(key)}\n${clip(body, BODY_MAX)}`;
}

/** `body` with a `Closes #N` line unless it already closes that item. */
export function closingBody(body: string, closes: number | undefined): string {
  if (closes === undefined) return body;
  const already = new RegExp(`\\b(close[sd]?|fix(e[sd])?|resolve[sd]?) #${closes}\\b`, 'i').test(body);
  return already ? body : `${body.trimEnd()}\n\nCloses #${closes}`.trimStart();
}

/** Whether every wanted label is on the item (case-insensitive, as both forges compare label names). */
export function hasLabels(have: string[], want: string[] | undefined): boolean {
  const set = new Set(have.map((l) => l.toLowerCase()));
  return (want ?? []).every((l) => set.has(l.toLowerCase()));
}

/** The item number at the end of an issue or pull request URL (API or web). */
export function numberFromUrl(url: string | null | undefined): number {
  const match = /\/(?:issues|pulls?)\/(\d+)\/?$/.exec(url ?? '');
  return match ? Number(match[1]) : 0;
}

export function boundText(text: string | null | undefined, max: number): string {
  return clip(text ?? '', max);
}
