// spec.report of a trigger, for all its tasks at once: which task's item gets which report actions
// (trigger-report.ts reportActions, one task at a time), where an item's work goes (its branch), and the
// marked comment of an item that gets no task. Pure: the runner looks up the PR heads and items asked for
// and performs the actions (sources/triggers/report-task.ts).
import { emptyStatus } from '../api/agent-task-status.ts';
import type { AgentTaskStatus } from '../api/agent-task-status.ts';
import { gitRefProblem } from '../api/agent-task.ts';
import type { AgentTriggerSpec, AgentTriggerStatus } from '../api/agent-trigger.ts';
import { issueBranch } from '../api/agent-trigger.ts';
import { sameBranch } from '../api/integrate.ts';
import type { ForgeItem } from '../api/forge-item.ts';
import {
  codeSpan,
  itemReportKey,
  type ReportAction,
  type ReportedState,
  type ReportItem,
  reportActions,
  reportingTasks,
} from './trigger-report.ts';
import { gitWorkspaceOf } from '../api/git-workspace.ts';

/** A task of the trigger as a report sees it: its labels and its status as recorded (undefined: none yet). */
export interface ReportedTask {
  name: string;
  labels: Readonly<Record<string, string>>;
  status?: AgentTaskStatus;
}

/** One task's report: the actions for its item, and the state to remember once they are done. */
export interface TaskReport {
  task: string;
  number: number;
  /** The hidden marker's key of the item's comment (trigger-report.ts itemReportKey). */
  key: string;
  item: ReportItem;
  actions: ReportAction[];
  next: ReportedState;
  /** The episodes pushed the work (a git workspace): a publish only opens the PR, on this base by default. */
  defaultBase?: string;
}

export interface ReportPlanInput {
  trigger: { name: string; spec: AgentTriggerSpec };
  /** Every task of the trigger, those this pass creates included (they have no status yet). */
  tasks: ReportedTask[];
  status: AgentTriggerStatus;
  /** What the source's items are when the forge was not asked (a poll's kind; a webhook: issues). */
  kind: 'issues' | 'pullRequests';
  resumePermission?: string;
  /** Items read from the forge for a publish (the PR's title is the item's title now). */
  items: ReadonlyMap<number, ReportItem>;
  now: Date;
}

/** The reports due, the items to read first (a publish needs the item as it is now), and the pruned status. */
export function reportPlan(input: ReportPlanInput): {
  reports: TaskReport[];
  needItems: number[];
  reported: NonNullable<AgentTriggerStatus['reported']>;
  pullRequests: NonNullable<AgentTriggerStatus['pullRequests']>;
} {
  const report = input.trigger.spec.report;
  const names = new Set(input.tasks.map((t) => t.name));
  const reported = keep(input.status.reported, names);
  const pullRequests = keep(input.status.pullRequests, names);
  const reports: TaskReport[] = [];
  const needItems: number[] = [];
  if (!report) return { reports, needItems, reported, pullRequests };
  const git = templateGit(input.trigger.spec);
  // One report per item, its newest run's, on the item's one comment (a re-run edits what the first wrote).
  for (const { task, number } of reportingTasks(input.trigger.name, input.tasks)) {
    const status = task.status ?? emptyStatus();
    const last = reported[task.name] ?? {};
    const publishDue =
      git !== undefined &&
      !!report.pullRequest &&
      status.phase === 'Succeeded' &&
      status.workspaceChanges > 0 &&
      !last.publishedBranch;
    const known = input.items.get(number);
    if (publishDue && !known) {
      needItems.push(number);
      continue;
    }
    const item = publishDue && known ? known : { number, title: '', isPullRequest: input.kind !== 'issues' };
    const decided = reportActions({
      item,
      status,
      spec: report,
      last,
      task: task.name,
      resumePermission: input.resumePermission,
      now: () => input.now,
    });
    // Without a git workspace nothing was pushed: a publish waits (report-task.ts performs only what it can).
    const actions = git ? decided.actions : decided.actions.filter((a) => a.kind !== 'publish');
    const next = git ? decided.next : { ...decided.next, publishedBranch: last.publishedBranch };
    if (actions.length === 0) continue;
    const defaultBase = git ? (report.pullRequest?.base ?? git.ref) : undefined;
    reports.push({
      task: task.name,
      number,
      key: itemReportKey(input.trigger.name, number),
      item,
      actions,
      next,
      defaultBase,
    });
  }
  return { reports, needItems, reported, pullRequests };
}

/** The task spec to create, why the item gets no task (said on the item instead), or the PR to read first. */
export type ItemSpec = { spec: Record<string, unknown> } | { refused: string } | { needPull: number };

/**
 * The task spec with its git workspace's ref set to the branch its item's work goes to: episodic/NUMBER for
 * an issue, a PR item's own branch. Unchanged without spec.report.pullRequest or a git workspace. A PR whose
 * branch is not in the trigger's repo (a fork) or is no usable branch name is refused: the episodes would
 * otherwise push a same-named branch of the base repo (or the template's ref), never the PR. `pull` is the
 * PR as the forge has it, when the item itself does not carry its head; `canRead`: a forge client is there.
 */
export function itemBranch(
  spec: Record<string, unknown>,
  trigger: { spec: AgentTriggerSpec },
  item: ForgeItem,
  pull: Pick<ForgeItem, 'headBranch' | 'headRepo'> | undefined,
  canRead: boolean,
): ItemSpec {
  const git = templateGit(trigger.spec);
  if (!git || !trigger.spec.report?.pullRequest) return { spec };
  let branch = issueBranch(item.number);
  if (item.isPullRequest) {
    const head = item.headBranch ? item : pull;
    if (!head && !canRead) return { refused: "the PR's branch is unknown without a forge client" };
    if (!head) return { needPull: item.number };
    const { gitea, github, webhook } = trigger.spec.source;
    const refused = prBranchProblem(head, (gitea ?? github ?? webhook)?.repo ?? '');
    if (refused) return { refused };
    const into = (spec as { integrate?: { into: string } }).integrate?.into;
    if (into && sameBranch(head.headBranch as string, into))
      return { refused: `the PR's head is the merge queue's \`into\` (${into}): it cannot be integrated into itself` };
    branch = head.headBranch as string;
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
  return gitWorkspaceOf(spec.template.spec.workspace);
}

function keep<T>(record: Record<string, T> | undefined, names: Set<string>): Record<string, T> {
  return Object.fromEntries(Object.entries(record ?? {}).filter(([name]) => names.has(name)));
}
