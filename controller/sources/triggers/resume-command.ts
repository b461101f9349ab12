// Carries a `/episodic resume` comment to the resume path the CLI uses: the commenter's permission is read
// from the forge (only for a comment that is a resume command), reconciler/trigger-resume.ts decides, and
// the request goes where `episodic resume` puts it (locally the request file; on a cluster
// sources/cluster/resume-annotations.ts, as `episodic resume --kubeconfig`).
import { requestLocalResume } from '../local/resume-requests.ts';
import type { NewResumeRequest } from '../../api/resume.ts';
import type { Phase } from '../../api/agent-task-status.ts';
import {
  parseResumeCommand,
  type RepoPermission,
  type ResumeCommandDecision,
  resumeCommand,
} from '../../reconciler/trigger-resume.ts';
import { type Forge, readPermission } from '../../forge/types.ts';
import type { ForgeComment } from '../../api/forge-item.ts';

export interface ResumeCommandContext {
  forge: Forge;
  comment: ForgeComment;
  command?: string;
  minPermission: RepoPermission;
  phase: Phase | undefined;
  handledToken?: string;
  /** Hands the request on: requestLocalResume locally, the annotation patch on a cluster. */
  request: (request: NewResumeRequest) => Promise<void> | void;
}

/** Decides on one comment and, for a permitted resume command, makes the request. */
export async function handleResumeComment(ctx: ResumeCommandContext): Promise<ResumeCommandDecision> {
  const command = ctx.command ?? '/episodic';
  // Only a resume command costs a permission lookup.
  if (!parseResumeCommand(ctx.comment.body, command)) return { kind: 'ignore', why: 'not a resume command' };
  // A lookup the token may not make (Gitea: another user's role needs a repo admin) is an answer, not a throw.
  const permission = ctx.comment.authorIsBot ? undefined : await readPermission(ctx.forge, ctx.comment.author);
  const decision = resumeCommand({ ...ctx, command, forge: ctx.forge.kind, permission });
  if (decision.kind === 'resume') await ctx.request(decision.request);
  return decision;
}

/** The local path of `episodic resume`: a request file in the state directory, for a NeedsReview task. */
export function localResumeRequester(stateDir: string, namespace: string, name: string) {
  return (request: NewResumeRequest): void => {
    const outcome = requestLocalResume(stateDir, namespace, name, request);
    if (!outcome.ok) throw new Error(outcome.message);
  };
}
