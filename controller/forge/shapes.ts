// The issue, pull request and comment shapes GitHub and Gitea share (Gitea copied GitHub's), validated with
// zod and cut to bounds: everything a forge sends is untrusted text. Used by both clients and by webhooks.
import { z } from 'zod';
import type { ForgeComment, ForgeItem } from '../api/forge-item.ts';
import type { PullMergeState } from './types.ts';
import { BODY_MAX, LABELS_MAX, NAME_MAX, TITLE_MAX, boundText, numberFromUrl } from './types.ts';

const text = (max: number) =>
  z
    .string()
    .nullish()
    .transform((s) => boundText(s, max));
const url = z.string().max(2000).nullish();

const UserSchema = z.object({ login: text(NAME_MAX), type: z.string().max(50).nullish() });
const LabelSchema = z.union([z.object({ name: text(NAME_MAX) }), z.string().transform((name) => ({ name }))]);
const labels = z
  .array(LabelSchema)
  .nullish()
  .transform((l) => (l ?? []).slice(0, LABELS_MAX).map((x) => boundText(x.name, NAME_MAX)));

const common = {
  number: z.number().int().positive(),
  title: text(TITLE_MAX),
  body: text(BODY_MAX),
  html_url: url,
  user: UserSchema.nullish(),
  labels,
  state: z.string().max(20),
  updated_at: z.string().max(40).nullish(),
  comments: z.number().int().nonnegative().nullish(),
};

export const IssueSchema = z.object({ ...common, pull_request: z.unknown().nullish() });
/** `head.repo` is where the PR's branch lives: null once a fork is deleted, absent in payloads that omit it. */
const PullHeadSchema = z.object({ ref: text(255), repo: z.object({ full_name: text(2 * NAME_MAX + 1) }).nullish() });
export const PullSchema = z.object({ ...common, head: PullHeadSchema.nullish() });
export const CommentSchema = z.object({
  id: z.number().int().positive(),
  body: text(BODY_MAX),
  user: UserSchema.nullish(),
  created_at: z.string().max(40).nullish(),
  updated_at: z.string().max(40).nullish(),
  issue_url: url,
  pull_request_url: url,
  html_url: url,
});
/** What ensurePullRequest compares: title and body unclipped, so an unchanged PR is not edited. */
export const PullRefSchema = z.object({
  number: z.number().int().positive(),
  html_url: z.string().max(2000),
  title: z.string(),
  body: z.string().nullish(),
  state: z.string(),
});

export type ApiIssue = z.input<typeof IssueSchema>;
export type ApiPull = z.input<typeof PullSchema>;
export type ApiComment = z.input<typeof CommentSchema>;
export type PullRef = z.output<typeof PullRefSchema>;

function isBot(user: z.output<typeof UserSchema> | null | undefined): boolean {
  return user?.type === 'Bot' || /\[bot\]$/i.test(user?.login ?? '');
}

function item(raw: z.output<typeof IssueSchema> | z.output<typeof PullSchema>, isPullRequest: boolean): ForgeItem {
  const out: ForgeItem = {
    number: raw.number,
    title: raw.title,
    body: raw.body,
    url: raw.html_url ?? '',
    author: raw.user?.login ?? '',
    authorIsBot: isBot(raw.user),
    labels: raw.labels,
    open: raw.state === 'open',
    isPullRequest,
    updatedAt: raw.updated_at ?? '',
  };
  if (typeof raw.comments === 'number') out.comments = raw.comments;
  const head = 'head' in raw ? raw.head : undefined;
  if (head?.ref) out.headBranch = head.ref;
  if (head?.repo !== undefined) out.headRepo = head.repo?.full_name ?? '';
  return out;
}

/** An entry of an issue list (a pull request carries a `pull_request` key there). */
export function parseIssue(raw: unknown): ForgeItem {
  const issue = IssueSchema.parse(raw);
  return item(issue, issue.pull_request !== undefined && issue.pull_request !== null);
}

/** A pull request object (pulls API, pull_request webhooks). */
export function parsePull(raw: unknown): ForgeItem {
  return item(PullSchema.parse(raw), true);
}

/** `number`: the item asked for; otherwise read off the comment's issue (or pull request) URL. */
export function parseComment(raw: unknown, number?: number): ForgeComment {
  const c = CommentSchema.parse(raw);
  return {
    id: c.id,
    itemNumber: number ?? (numberFromUrl(c.issue_url) || numberFromUrl(c.pull_request_url)),
    author: c.user?.login ?? '',
    authorIsBot: isBot(c.user),
    body: c.body,
    createdAt: c.created_at ?? '',
    updatedAt: c.updated_at ?? c.created_at ?? '',
  };
}

const sha = z
  .string()
  .regex(/^[0-9a-f]{40,64}$/)
  .nullish();
const MergeStateSchema = z.object({
  state: z.string().max(20),
  merged: z.boolean().nullish(),
  merge_commit_sha: sha,
  mergeable: z.boolean().nullish(),
  head: z.object({ sha }).nullish(),
});

/** A PR's merge state (both forges: `merged` beside `state` closed; merge_commit_sha is what the base got). */
export function parseMergeState(raw: unknown): PullMergeState {
  const p = MergeStateSchema.parse(raw);
  const state = p.merged ? 'merged' : p.state === 'open' ? 'open' : 'closed';
  return {
    state,
    ...(p.head?.sha ? { head: p.head.sha } : {}),
    ...(typeof p.mergeable === 'boolean' ? { mergeable: p.mergeable } : {}),
    ...(p.merged && p.merge_commit_sha ? { mergeCommit: p.merge_commit_sha } : {}),
  };
}

export function parsePullRef(raw: unknown): PullRef {
  return PullRefSchema.parse(raw);
}
