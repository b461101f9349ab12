// `/episodic resume` comments a poll saw (issue 21 §2): each goes to the newest task of its item through
// resume-command.ts — the commenter's permission from the forge, the rule of reconciler/
// trigger-resume.ts, and the resume path the CLI uses (a request file locally, the resume annotations on a
// cluster). They are taken out of what plans new tasks: a resume is not a request to run the item again.
import type { AgentTaskStatus } from '../../api/agent-task-status.ts';
import type { ForgeSource } from '../../api/agent-trigger.ts';
import type { CreatedTask } from '../../core/created-tasks.ts';
import { handleResumeComment } from './resume-command.ts';
import type { Forge } from '../../forge/types.ts';
import type { ForgeComment } from '../../api/forge-item.ts';
import type { UndecidedItem } from '../../api/agent-trigger.ts';
import { type ItemSeen, newestOfItem } from '../../reconciler/trigger-items.ts';
import { parseResumeCommand } from '../../reconciler/trigger-resume.ts';

export type ResumeRequest = { token: string; by: string; episodes?: number };

/** The comments that are resume commands, and what is left for planning. */
export function splitResumeComments(
  seen: ItemSeen[],
  command: string | undefined,
): { commands: ItemSeen[]; resumes: ForgeComment[] } {
  if (!command) return { commands: seen, resumes: [] };
  const resumes: ForgeComment[] = [];
  const commands = seen.map((s) => {
    const rest = s.comments.filter((c) => !parseResumeCommand(c.body, command));
    resumes.push(...s.comments.filter((c) => parseResumeCommand(c.body, command)));
    return { ...s, comments: rest };
  });
  return { commands, resumes };
}

export interface ResumeContext {
  trigger: string;
  forge: Forge;
  source: ForgeSource;
  tasks: CreatedTask[];
  taskStatus(namespace: string, name: string): AgentTaskStatus | undefined;
  request(namespace: string, name: string, request: ResumeRequest): Promise<void> | void;
  log(fields: Record<string, unknown>, message: string): void;
}

/**
 * Hands each permitted resume comment to its item's newest task; the others are only logged. Returns the
 * items whose resume waits on a permission the token could not read (they are polled again).
 */
export async function handleResumes(resumes: ForgeComment[], ctx: ResumeContext): Promise<UndecidedItem[]> {
  const undecided: UndecidedItem[] = [];
  for (const comment of resumes) {
    const task = newestOfItem(ctx.trigger, comment.itemNumber, ctx.tasks);
    if (!task) continue;
    const status = ctx.taskStatus(task.namespace, task.name);
    const decision = await handleResumeComment({
      forge: ctx.forge,
      comment,
      command: ctx.source.command?.text,
      minPermission: ctx.source.command?.minPermission ?? 'write',
      phase: status?.phase,
      handledToken: status?.resume?.handledToken,
      request: (r) => ctx.request(task.namespace, task.name, r),
    });
    const why = decision.kind === 'resume' ? undefined : decision.why;
    ctx.log({ task: task.name, comment: comment.id, decision: decision.kind, why }, 'resume comment');
    if (decision.kind === 'undecided') undecided.push({ number: comment.itemNumber, reason: decision.why });
  }
  return undecided;
}
