// A `/episodic resume` comment on a trigger's item (issue 21 §2): from a user with at least the trigger's
// minPermission it becomes the same resume request `episodic resume` makes (a request file locally, the
// episodic.dev/resume annotations on a cluster); from anyone else, nothing. Pure: the caller looks up the
// commenter's permission and hands the request to the path the CLI uses.
import { cleanName } from '../api/bounds.ts';
import type { Phase } from '../api/agent-task-status.ts';
import type { ForgeComment } from '../api/forge-item.ts';
import { MAX_GRANT, canResume } from '../api/resume.ts';
import type { NewResumeRequest } from '../api/resume.ts';
import type { ItemSeen } from './trigger-items.ts';

export const PERMISSION_ORDER = ['read', 'triage', 'write', 'maintain', 'admin'] as const;
export type RepoPermission = (typeof PERMISSION_ORDER)[number];

export interface ResumeCommandInput {
  comment: { id: number; author: string; authorIsBot: boolean; body: string };
  forge: 'github' | 'gitea';
  /** The trigger's command text (default /episodic). */
  command?: string;
  minPermission: RepoPermission;
  /** The commenter's role on the repo (undefined when they have none), or why the token could not read it. */
  permission: RepoPermission | undefined | { unknown: string };
  /** The item's task phase: only a NeedsReview task is resumed. */
  phase: Phase | undefined;
  /** The token already handled (status.resume.handledToken): one comment resumes once. */
  handledToken?: string;
}

export type ResumeCommandDecision =
  | { kind: 'resume'; request: NewResumeRequest }
  | { kind: 'ignore'; why: string }
  /** It would resume if the commenter is permitted, which could not be read: it waits, asked again next pass. */
  | { kind: 'undecided'; why: string };

/** What a permitted resume comment asks for: the request `episodic resume` makes. */
export type ResumeRequest = Extract<ResumeCommandDecision, { kind: 'resume' }>['request'];

/** Whether the comment is a resume command this user may give, and the request it makes. */
export function resumeCommand(input: ResumeCommandInput): ResumeCommandDecision {
  const parsed = parseResumeCommand(input.comment.body, input.command ?? '/episodic');
  if (!parsed) return { kind: 'ignore', why: 'not a resume command' };
  if (input.comment.authorIsBot) return { kind: 'ignore', why: 'bots never resume' };
  const token = `${input.forge}-comment-${input.comment.id}`;
  const { permission } = input;
  if (typeof permission !== 'object' && !atLeast(permission, input.minPermission))
    return { kind: 'ignore', why: `${input.comment.author} lacks ${input.minPermission} permission` };
  if (token === input.handledToken) return { kind: 'ignore', why: 'already handled' };
  if (!canResume(input.phase)) return { kind: 'ignore', why: `task is ${input.phase ?? 'Pending'}` };
  if (typeof permission === 'object') return { kind: 'undecided', why: permission.unknown };
  const by = `${input.forge}:${cleanName(input.comment.author, 100)}`;
  return { kind: 'resume', request: { token, by, ...(parsed.episodes ? { episodes: parsed.episodes } : {}) } };
}

/** `/episodic resume` or `/episodic resume 5` (five more episodes) on the comment's first line. */
export function parseResumeCommand(body: string, command: string): { episodes?: number } | undefined {
  const first = body.trimStart().split('\n', 1)[0].trim();
  const words = first.split(/\s+/);
  if (words[0] !== command || words[1] !== 'resume' || words.length > 3) return undefined;
  if (words.length === 2) return {};
  const n = /^\d{1,5}$/.test(words[2]) ? Number(words[2]) : NaN;
  return n >= 1 && n <= MAX_GRANT ? { episodes: n } : undefined;
}

export function atLeast(have: RepoPermission | undefined, need: RepoPermission): boolean {
  return have !== undefined && PERMISSION_ORDER.indexOf(have) >= PERMISSION_ORDER.indexOf(need);
}

/** The comments that are resume commands, and what is left for planning: a resume is not a request to run again. */
export function splitResumeComments(
  seen: ItemSeen[],
  command: string | undefined,
): { commands: ItemSeen[]; resumes: ForgeComment[] } {
  if (!command) return { commands: seen, resumes: [] };
  const resumes: ForgeComment[] = [];
  const commands = seen.map((s) => {
    resumes.push(...s.comments.filter((c) => parseResumeCommand(c.body, command)));
    return { ...s, comments: s.comments.filter((c) => !parseResumeCommand(c.body, command)) };
  });
  return { commands, resumes };
}
