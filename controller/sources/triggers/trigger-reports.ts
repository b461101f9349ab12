// spec.report of a forge trigger, each pass: for each task the trigger created, report-task.ts reportTask
// brings its item up to date (the marked comment edited in place, the phase label, and on Succeeded with
// workspace changes the pull request). What was reported is kept in status.reported[TASK] (reconciler/
// trigger-report.ts ReportedState), so a restart does not post again; a PR in status.pullRequests[TASK].
// The work reaches the forge from the episodes: a template with a git workspace gets the item's branch as its
// ref (episodic/NUMBER, or a PR item's own branch), so each episode pushes there — locally from the clone
// under the state dir, on a cluster from the pod — and the controller only opens the PR.
import type { AgentTaskStatus } from '../../api/agent-task-status.ts';
import { emptyStatus } from '../../api/agent-task-status.ts';
import { gitRefProblem } from '../../api/agent-task.ts';
import type { AgentTriggerSpec, AgentTriggerStatus, ForgeSource } from '../../api/agent-trigger.ts';
import { webhookReportMissing } from '../../api/agent-trigger.ts';
import type { CreatedTask } from '../../core/created-tasks.ts';
import { reportTask } from './report-task.ts';
import type { Forge } from '../../forge/types.ts';
import type { ForgeItem, ForgeKind } from '../../api/forge-item.ts';
import { codeSpan, itemReportKey, type ReportItem, reportingTasks } from '../../reconciler/trigger-report.ts';

/** What reporting needs of a source: the forge's server and repo, the token, the item kind, the command. */
export type ReportSource = Pick<ForgeSource, 'repo' | 'kind' | 'tokenEnv' | 'tokenSecretRef' | 'command'> & {
  apiURL?: string;
};

/**
 * The forge a trigger reports to, the same for every source: a forge source itself, or a webhook source's
 * repo, apiURL and token (its items may be issues or PRs: the forge says which when it matters). Throws,
 * naming the fields, when a webhook source lacks them.
 */
export function reportTarget(spec: AgentTriggerSpec): { kind: ForgeKind; source: ReportSource } | undefined {
  const { gitea, github, webhook } = spec.source;
  if (gitea) return { kind: 'gitea', source: gitea };
  if (github) return { kind: 'github', source: github };
  if (!webhook) return undefined;
  const missing = webhookReportMissing(webhook);
  if (missing.length > 0)
    throw new Error(missing.map((m) => `spec.source.webhook.${m.field}: ${m.message}`).join('; '));
  return { kind: webhook.forge, source: { ...webhook, repo: webhook.repo as string, kind: 'issues' } };
}

export interface ReportContext {
  forge: Forge;
  trigger: { name: string; spec: AgentTriggerSpec };
  source: ReportSource;
  /** The tasks the trigger created that still exist. */
  tasks: CreatedTask[];
  status: AgentTriggerStatus;
  taskStatus(namespace: string, name: string): AgentTaskStatus | undefined;
  now: () => Date;
}

/** Reports every task's state; status.reported/pullRequests are updated task by task (a failure keeps the rest). */
export async function reportTriggerTasks(ctx: ReportContext): Promise<void> {
  const report = ctx.trigger.spec.report;
  if (!report) return;
  const names = new Set(ctx.tasks.map((t) => t.name));
  ctx.status.reported = keep(ctx.status.reported, names);
  ctx.status.pullRequests = keep(ctx.status.pullRequests, names);
  const git = templateGit(ctx.trigger.spec);
  for (const { task, number } of reportingTasks(ctx.trigger.name, ctx.tasks)) {
    const status = ctx.taskStatus(task.namespace, task.name) ?? emptyStatus();
    const last = ctx.status.reported[task.name] ?? {};
    const publishDue =
      git !== undefined &&
      !!report.pullRequest &&
      status.phase === 'Succeeded' &&
      status.workspaceChanges > 0 &&
      !last.publishedBranch;
    const { next, done } = await reportTask({
      forge: ctx.forge,
      item: publishDue
        ? await itemNow(ctx, number)
        : { number, title: '', isPullRequest: ctx.source.kind !== 'issues' },
      task: task.name,
      key: itemReportKey(ctx.trigger.name, number),
      status,
      spec: report,
      last,
      pushed: git ? { defaultBase: report.pullRequest?.base ?? git.ref } : undefined,
      resumePermission: ctx.source.command?.minPermission,
      now: ctx.now,
    });
    ctx.status.reported[task.name] = next;
    for (const d of done)
      if (d.kind === 'publish' && d.pullRequest)
        ctx.status.pullRequests[task.name] = { number: d.pullRequest.number, url: d.pullRequest.url };
  }
}

/** The task spec to create, or why the item gets no task (said on the item instead). */
export type ItemSpec = { spec: Record<string, unknown> } | { refused: string };

/**
 * The task spec with its git workspace's ref set to the branch its item's work goes to: episodic/NUMBER for
 * an issue, a PR item's own branch. Unchanged without spec.report.pullRequest or a git workspace. A PR whose
 * branch is not in the trigger's repo (a fork) or is no usable branch name is refused: the episodes would
 * otherwise push a same-named branch of the base repo (or the template's ref), never the PR.
 */
export async function withItemBranch(
  spec: Record<string, unknown>,
  trigger: { spec: AgentTriggerSpec },
  item: ForgeItem,
  forge: Forge | undefined,
): Promise<ItemSpec> {
  const git = templateGit(trigger.spec);
  if (!git || !trigger.spec.report?.pullRequest) return { spec };
  let branch = `episodic/${item.number}`;
  if (item.isPullRequest) {
    if (!item.headBranch && !forge) return { refused: "the PR's branch is unknown without a forge client" };
    const pull = item.headBranch ? item : await (forge as Forge).getPullRequest(item.number);
    const { gitea, github, webhook } = trigger.spec.source;
    const repo = (gitea ?? github ?? webhook)?.repo ?? '';
    const refused = prBranchProblem(pull, repo);
    if (refused) return { refused };
    branch = pull.headBranch as string;
  }
  const workspace = spec.workspace as { git: Record<string, unknown> };
  return { spec: { ...spec, workspace: { ...workspace, git: { ...workspace.git, ref: branch } } } };
}

/** Why a PR item's work cannot go to its own branch in `repo` (OWNER/NAME), if it cannot. */
export function prBranchProblem(pull: Pick<ForgeItem, 'headBranch' | 'headRepo'>, repo: string): string | undefined {
  if (pull.headRepo !== undefined && pull.headRepo.toLowerCase() !== repo.toLowerCase())
    return `cannot push to a fork's branch (the PR's head is in ${pull.headRepo || 'a deleted fork'}, not ${repo})`;
  // Item text: used as a ref only when it is a valid branch name.
  if (!pull.headBranch || gitRefProblem(pull.headBranch)) return "the PR's head is not a usable branch name";
  return undefined;
}

/** The marked comment on an item that gets no task: the same key a task's report would use. */
export function refusalComment(task: string, reason: string): string {
  return `**episodic** task \`${task}\`: **not started**\n\n- Reason: ${codeSpan(reason)}`;
}

/** The template's git workspace ({url, ref}), if it has one. */
function templateGit(spec: AgentTriggerSpec): { url: string; ref: string } | undefined {
  const ws = spec.template.spec.workspace;
  return ws && typeof ws === 'object' && 'git' in ws ? ws.git : undefined;
}

/** The item as the forge has it now: the PR's title, and a PR item's own branch. */
async function itemNow(ctx: ReportContext, number: number): Promise<ReportItem> {
  if (ctx.source.kind === 'pullRequests') return ctx.forge.getPullRequest(number);
  return ctx.forge.getItem(number);
}

function keep<T>(record: Record<string, T> | undefined, names: Set<string>): Record<string, T> {
  return Object.fromEntries(Object.entries(record ?? {}).filter(([name]) => names.has(name)));
}
