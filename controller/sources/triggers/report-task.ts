// The carrier of a trigger's report (issue 21 §2): performs the actions reconciler/trigger-report.ts decides
// through a Forge — the one marked comment, the label swap, the push and its pull request — and hands back
// the state to remember. The trigger loop performs the reports reconcileTrigger decided (performTaskReport);
// reportTask decides and performs one task's report in one call.
import type { AgentTaskStatus } from '../../api/agent-task-status.ts';
import type { GitCredentials } from '../../git/git-credentials.ts';
import {
  type ReportAction,
  type ReportedState,
  type ReportItem,
  type ReportSpec,
  reportActions,
} from '../../reconciler/trigger-report.ts';
import type { TaskReport } from '../../reconciler/trigger-report-plan.ts';
import { publishWork, pushBranch } from '../../forge/push.ts';
import type { Forge } from '../../forge/types.ts';

/** Where a Succeeded task's work is pushed from. */
export interface ReportWorkspace {
  /** The git work tree the task ran in. */
  workspace: string;
  /** https://host/OWNER/NAME.git, without credentials. */
  remoteUrl: string;
  credentials: GitCredentials;
  /** The PR's base when spec.report.pullRequest.base is unset. */
  defaultBase: string;
}

export interface ReportTaskInput {
  forge: Forge;
  item: ReportItem;
  /** The task's name, shown in the comment. */
  task: string;
  /** The key of the report comment's hidden marker; the task's name unless given (the trigger loop: TRIGGER/TASK). */
  key?: string;
  status: AgentTaskStatus;
  spec: ReportSpec;
  /** What the last call returned (an empty object the first time). */
  last: ReportedState;
  /** Needed only when a publish is due; without it (and without `pushed`) the publish waits for a call that has one. */
  workspace?: ReportWorkspace;
  /** The episodes already pushed the work to the item's branch (a git workspace, locally or from the pod): only the PR is due. */
  pushed?: { defaultBase: string };
  resumePermission?: string;
  now: () => Date;
}

export type ReportDone =
  | { kind: 'comment'; id: number; action: 'created' | 'updated' | 'unchanged' }
  | { kind: 'labels'; labels: string[] }
  | { kind: 'publish'; branch: string; commit: string; pullRequest?: { number: number; url: string; action: string } };

/**
 * Brings the item up to date with the task and returns the state to pass next time. An action that throws
 * (ForgeUnavailableError, ForgeRateLimitedError…) leaves the returned-so-far state unsaved: the caller keeps
 * `last`, and the next call redoes only what is still different (every forge write is idempotent).
 */
export async function reportTask(input: ReportTaskInput): Promise<{ next: ReportedState; done: ReportDone[] }> {
  const { actions, next } = reportActions(input);
  const performable = input.workspace || input.pushed ? actions : actions.filter((a) => a.kind !== 'publish');
  if (performable.length !== actions.length) next.publishedBranch = input.last.publishedBranch;
  const done: ReportDone[] = [];
  for (const action of performable) done.push(await perform(input, action));
  return { next, done };
}

/** Where an action is performed: the forge, the item, the comment's key and, for a publish, where the work is. */
type PerformInput = Pick<ReportTaskInput, 'forge' | 'item' | 'task' | 'key' | 'workspace' | 'pushed'>;

/** The trigger loop's report of one task, as reconciler/trigger-report-plan.ts decided it: its actions, in order. */
export async function performTaskReport(forge: Forge, report: TaskReport): Promise<ReportDone[]> {
  const pushed = report.defaultBase === undefined ? undefined : { defaultBase: report.defaultBase };
  const input = { forge, item: report.item, task: report.task, key: report.key, pushed };
  const done: ReportDone[] = [];
  for (const action of report.actions) done.push(await perform(input, action));
  return done;
}

async function perform(input: PerformInput, action: ReportAction): Promise<ReportDone> {
  const { forge, item } = input;
  if (action.kind === 'comment') {
    const ref = await forge.upsertReport(item.number, input.key ?? input.task, action.body);
    return { kind: 'comment', ...ref };
  }
  if (action.kind === 'labels') {
    const labels = await forge.swapLabels(item.number, { add: action.add, remove: action.remove });
    return { kind: 'labels', labels };
  }
  return publish(input, action);
}

async function publish(input: PerformInput, action: Extract<ReportAction, { kind: 'publish' }>): Promise<ReportDone> {
  if (!input.workspace) return publishPushed(input, action);
  const ws = input.workspace;
  const push = { workspace: ws.workspace, remoteUrl: ws.remoteUrl, credentials: ws.credentials, branch: action.branch };
  if (!action.pullRequest) {
    // A PR item: its own head branch moves; the PR already exists.
    const { commit } = await pushBranch(push);
    return { kind: 'publish', branch: action.branch, commit };
  }
  const { base, ...pr } = action.pullRequest;
  // The branch is ours (episodic/N): a re-run of the item rewrites it.
  const ref = await publishWork(input.forge, { ...push, force: true }, { ...pr, base: base ?? ws.defaultBase });
  return {
    kind: 'publish',
    branch: action.branch,
    commit: ref.commit,
    pullRequest: { number: ref.number, url: ref.url, action: ref.action },
  };
}

/** The branch is on the forge already (the episodes pushed it): wait until its API sees it, then the PR. */
async function publishPushed(
  input: PerformInput,
  action: Extract<ReportAction, { kind: 'publish' }>,
): Promise<ReportDone> {
  const { forge } = input;
  await forge.waitForBranch(action.branch);
  if (!action.pullRequest) return { kind: 'publish', branch: action.branch, commit: '' };
  const { base, ...pr } = action.pullRequest;
  const defaultBase = input.pushed?.defaultBase ?? 'main';
  const ref = await forge.ensurePullRequest({ ...pr, head: action.branch, base: base ?? defaultBase });
  return {
    kind: 'publish',
    branch: action.branch,
    commit: '',
    pullRequest: { number: ref.number, url: ref.url, action: ref.action },
  };
}
