// The report rule of a forge trigger (issue 21 §2): from a task's status, what a person on the issue sees —
// one comment edited in place, a label naming the phase, and on success a pull request — and nothing more
// than changed since the last report. Pure: the carrier (sources/triggers/report-task.ts) performs the actions.
import { createHash } from 'node:crypto';
import { cleanName, clip, oneLine } from '../api/bounds.ts';
import type { AgentTaskStatus, Phase } from '../api/agent-task-status.ts';
import { issueBranch } from '../api/agent-trigger.ts';
import { ITEM_LABEL, itemTaskName, newestOfItem } from './trigger-items.ts';

/** spec.report of an AgentTrigger (api/agent-trigger.ts ReportSchema), after defaults. */
export interface ReportSpec {
  comment?: boolean;
  labels?: { running?: string; done?: string; review?: string };
  pullRequest?: { draft?: boolean; base?: string; titleTemplate?: string };
}

/** The item a task was created for (a ForgeItem has all of these). */
export interface ReportItem {
  number: number;
  title: string;
  isPullRequest: boolean;
  /** A PR item's own branch: its work is pushed there, and no new PR is opened. */
  headBranch?: string;
}

/** What was last reported for the item; kept by the caller (e.g. a task annotation) and passed back. */
export interface ReportedState {
  /** A digest of the comment text last written (commentDigest): status stays small with many tasks. */
  comment?: string;
  /** The label last put on the item. */
  label?: string;
  /** The branch the work was published to (once per task: a second Succeeded publishes nothing). */
  publishedBranch?: string;
  at?: string;
}

export type ReportAction =
  | { kind: 'comment'; body: string }
  | { kind: 'labels'; add: string[]; remove: string[] }
  | {
      kind: 'publish';
      branch: string;
      /** Absent for a PR item: the push to its head branch is the whole report. */
      pullRequest?: { title: string; body: string; closes: number; draft: boolean; base?: string };
    };

export interface ReportInput {
  item: ReportItem;
  status: AgentTaskStatus;
  spec: ReportSpec;
  last: ReportedState;
  /** The task's name, shown in the comment. */
  task: string;
  /** The trigger's command.minPermission, named in the NeedsReview hint. */
  resumePermission?: string;
  now: () => Date;
}

/** Longest comment body we write (the forge bounds it again); agent text in it is cut much shorter. */
export const REPORT_COMMENT_MAX = 4000;
const QUOTED_MAX = 600;
const ACTIVE: readonly Phase[] = ['Pending', 'Running', 'Waiting'];
const DONE: readonly Phase[] = ['Succeeded', 'Failed', 'Skipped'];

/** The actions that bring the item up to date with the status, and the state to remember after them. */
export function reportActions(input: ReportInput): { actions: ReportAction[]; next: ReportedState } {
  const { status, spec, last } = input;
  const actions: ReportAction[] = [];
  const next: ReportedState = { ...last };
  if (spec.comment) {
    const body = renderReport(status, input.task, input.resumePermission);
    const digest = commentDigest(body);
    if (digest !== last.comment) {
      actions.push({ kind: 'comment', body });
      next.comment = digest;
    }
  }
  const label = phaseLabel(status.phase, spec.labels);
  if (label !== undefined && label !== last.label) {
    const remove = Object.values(spec.labels ?? {}).filter((l): l is string => !!l && l !== label);
    actions.push({ kind: 'labels', add: [label], remove: [...new Set(remove)] });
    next.label = label;
  }
  const publish = publishAction(input);
  if (publish) {
    actions.push(publish);
    next.publishedBranch = publish.branch;
  }
  if (actions.length > 0) next.at = input.now().toISOString();
  return { actions, next };
}

/**
 * The key of an item's one report comment (its hidden marker): the item's first task's, TRIGGER/TRIGGER-N, so
 * a re-run (TRIGGER-N-2) edits the comment the first run wrote instead of posting a second one.
 */
export function itemReportKey(trigger: string, number: number): string {
  return `${trigger}/${itemTaskName(trigger, number, 1)}`;
}

/** The tasks that report, one per item: its newest run (an older run already reported how it ended). */
export function reportingTasks<T extends { name: string; labels: Readonly<Record<string, string>> }>(
  trigger: string,
  tasks: readonly T[],
): Array<{ task: T; number: number }> {
  const numbers = new Set(tasks.map((t) => Number(t.labels[ITEM_LABEL])).filter((n) => Number.isInteger(n) && n > 0));
  return [...numbers].flatMap((number) => {
    const task = newestOfItem(trigger, number, tasks);
    return task ? [{ task, number }] : [];
  });
}

/** What ReportedState.comment holds: 16 hex digits of the text's SHA-256. */
export function commentDigest(body: string): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 16);
}

/** The label of the phase: running while active, done when finished, review when a person is needed. */
export function phaseLabel(phase: Phase | undefined, labels: ReportSpec['labels']): string | undefined {
  const p = phase ?? 'Pending';
  if (ACTIVE.includes(p)) return labels?.running || undefined;
  if (DONE.includes(p)) return labels?.done || undefined;
  if (p === 'NeedsReview') return labels?.review || undefined;
  return undefined;
}

function publishAction(input: ReportInput): Extract<ReportAction, { kind: 'publish' }> | undefined {
  const { item, status, spec, last } = input;
  if (!spec.pullRequest || status.phase !== 'Succeeded' || status.workspaceChanges <= 0) return undefined;
  if (last.publishedBranch) return undefined;
  if (item.isPullRequest) return item.headBranch ? { kind: 'publish', branch: item.headBranch } : undefined;
  const pr = spec.pullRequest;
  return {
    kind: 'publish',
    branch: issueBranch(item.number),
    pullRequest: {
      title: renderTitle(pr.titleTemplate ?? '{{item.title}}', item),
      body: `Work of episodic task \`${input.task}\`: ${status.episodes} episodes, ${usd(status.costUSD)}.`,
      closes: item.number,
      draft: pr.draft ?? false,
      base: pr.base,
    },
  };
}

/** `{{item.title}}` and `{{item.number}}` filled in, one line; a PR title renders no markdown. */
export function renderTitle(template: string, item: ReportItem): string {
  const filled = oneLine(
    template.replaceAll('{{item.title}}', item.title).replaceAll('{{item.number}}', String(item.number)),
  );
  return clip(filled || `episodic #${item.number}`, 256);
}

/** The report comment: what a person would see, nothing that changes from one poll to the next. */
export function renderReport(status: AgentTaskStatus, task: string, resumePermission = 'write'): string {
  const phase = status.phase ?? 'Pending';
  const lines = [`**episodic** task \`${safeName(task)}\`: **${phase}**`, ''];
  const step = status.step?.summary ?? (status.step ? `${status.step.index} ${status.step.name}` : undefined);
  if (step) lines.push(`- Step: ${codeSpan(step)}`);
  lines.push(`- Episodes: ${status.episodes}`, `- Cost: ${usd(status.costUSD)}`);
  const stopped = !ACTIVE.includes(phase);
  if (stopped && status.reason) lines.push(`- Reason: ${codeSpan(status.reason)}`);
  if (stopped && status.message) lines.push('', codeFence(status.message));
  if (phase === 'NeedsReview')
    lines.push(
      '',
      `The task stopped and needs a person. To let it go on, comment \`/episodic resume\` (needs ${safeName(resumePermission)} access).`,
    );
  return clip(lines.join('\n'), REPORT_COMMENT_MAX);
}

function usd(value: number): string {
  return `$${value.toFixed(2)}`;
}

function safeName(name: string): string {
  return cleanName(name, 253);
}

/**
 * Untrusted text as inline code: one line, bounded, backticks cannot close the span. Inside a code span
 * markdown renders no HTML, mention or link, so `@someone` pings nobody and `<img>` stays text.
 */
export function codeSpan(text: string): string {
  const flat = clip(text.replace(/[\r\n\t]+/g, ' ').trim(), 120);
  const fence = '`'.repeat(longestRun(flat, '`') + 1);
  const pad = flat.startsWith('`') || flat.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${flat}${pad}${fence}`;
}

/** Untrusted text as a fenced block longer than any backtick run inside it, so it cannot break out. */
export function codeFence(text: string): string {
  const body = clip(text.replace(/\r\n?/g, '\n').trim(), QUOTED_MAX);
  const fence = '`'.repeat(Math.max(3, longestRun(body, '`') + 1));
  return `${fence}text\n${body}\n${fence}`;
}

function longestRun(text: string, ch: string): number {
  let best = 0;
  let run = 0;
  for (const c of text) {
    run = c === ch ? run + 1 : 0;
    best = Math.max(best, run);
  }
  return best;
}
