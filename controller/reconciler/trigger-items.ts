// Which forge items become tasks, as a pure function of what a poll (or a webhook) saw and the tasks the
// trigger already made. Task names are deterministic — TRIGGER-NUMBER, then TRIGGER-NUMBER-2, -3 for
// re-triggers — so a poll, a webhook and a restart that see the same item can never create it twice.
import { clip } from '../api/bounds.ts';
import { PERMISSIONS, UNDECIDED_ITEMS_MAX, UNDECIDED_REASON_MAX } from '../api/agent-trigger.ts';
import type { ItemsSkipped, Permission, SkipReason, UndecidedItem } from '../api/agent-trigger.ts';
import type { ForgeComment, ForgeItem, PermissionAnswer } from '../api/forge-item.ts';
import { isReportComment } from '../api/forge-item.ts';

/** Labels on every task a trigger creates for a forge item. */
export const ITEM_LABEL = 'episodic.dev/trigger-item';
/** The newest command comment id the item had when the task was created: only a newer one re-triggers. */
export const COMMENT_MARK_LABEL = 'episodic.dev/trigger-comment';

/** A task this trigger created (the owner's label found it) and whether it has finished. */
export interface ExistingTask {
  name: string;
  labels: Readonly<Record<string, string>>;
  finished: boolean;
}

export interface ItemRules {
  labels: string[];
  excludeAuthors: string[];
  command?: { text: string; minPermission: Permission };
}

export interface ItemSeen {
  item: ForgeItem;
  /** The item's comments, oldest first (only needed when the rules have a command). */
  comments: ForgeComment[];
}

export interface PlannedTask {
  name: string;
  item: ForgeItem;
  /** The command comment that triggered it, if one did. */
  comment?: ForgeComment;
  labels: Record<string, string>;
}

export interface ItemPlan {
  create: PlannedTask[];
  /** Items that match but wait for maxConcurrency or were cut by maxTotal. */
  held: number;
  /** Items that got no task, by reason (status.itemsSkipped adds them up). */
  skipped: ItemsSkipped;
  /** Items that could not be judged (a commenter's permission unreadable): they wait, the others go on. */
  undecided: UndecidedItem[];
}

export type { PermissionAnswer };
export type PermissionOf = (user: string) => PermissionAnswer;

/** What one item gets: a task, nothing (and why), or a wait until it can be judged. */
export type ItemDecision =
  | { kind: 'create'; task: PlannedTask }
  | { kind: 'skip'; reason: SkipReason }
  | { kind: 'undecided'; reason: string };

/** Whether an author may never trigger: bots and excludeAuthors (episodic's own comments: isReportComment). */
export function isExcluded(author: string, isBot: boolean, rules: Pick<ItemRules, 'excludeAuthors'>): boolean {
  return exclusion(author, isBot, rules) !== undefined;
}

function exclusion(author: string, isBot: boolean, rules: Pick<ItemRules, 'excludeAuthors'>): SkipReason | undefined {
  if (isBot || /\[bot\]$/i.test(author)) return 'bot';
  const lower = author.toLowerCase();
  return rules.excludeAuthors.some((a) => a.toLowerCase() === lower) ? 'excludedAuthor' : undefined;
}

export function hasPermission(have: PermissionAnswer, need: Permission): boolean {
  return typeof have === 'string' && PERMISSIONS.indexOf(have) >= PERMISSIONS.indexOf(need);
}

/** A comment is a command when its first word is the command text ("/episodic", "/episodic please"). */
export function isCommand(body: string, text: string): boolean {
  const first = body.trimStart().split(/\s/, 1)[0];
  return first === text;
}

/** An item's command comments as judged: the newest permitted, the newest refused and why, the newest unreadable. */
interface Commands {
  newest?: ForgeComment;
  refused?: { id: number; reason: SkipReason };
  unknown?: { id: number; reason: string };
}

/**
 * The command comments of an item. Loop prevention is the marker: a comment episodic wrote is never a command;
 * anyone else's counts, the token's own user's too (a personal token is the common local set-up).
 */
export function judgeCommands(seen: ItemSeen, rules: ItemRules, permissionOf: PermissionOf): Commands {
  const out: Commands = {};
  const command = rules.command;
  if (!command) return out;
  for (const c of seen.comments) {
    if (!isCommand(c.body, command.text) || isReportComment(c.body)) continue;
    const excluded = exclusion(c.author, c.authorIsBot, rules);
    const answer = excluded ? undefined : permissionOf(c.author);
    if (typeof answer === 'object') {
      if (!out.unknown || c.id > out.unknown.id) out.unknown = { id: c.id, reason: answer.unknown };
    } else if (excluded || !hasPermission(answer, command.minPermission)) {
      if (!out.refused || c.id > out.refused.id) out.refused = { id: c.id, reason: excluded ?? 'commandNotPermitted' };
    } else if (!out.newest || c.id > out.newest.id) out.newest = c;
  }
  return out;
}

/** Why the item itself does not match (closed, its author, its labels), or undefined when it does. */
function whyNoMatch(item: ForgeItem, rules: ItemRules): SkipReason | undefined {
  if (!item.open) return 'closed';
  const excluded = exclusion(item.author, item.authorIsBot, rules);
  if (excluded) return excluded;
  if (rules.labels.length === 0) return rules.command ? 'noCommand' : undefined;
  const have = new Set(item.labels.map((l) => l.toLowerCase()));
  return rules.labels.every((l) => have.has(l.toLowerCase())) ? undefined : 'labelsMissing';
}

/** The name of the run-th task of an item: TRIGGER-N, TRIGGER-N-2, … */
export function itemTaskName(trigger: string, number: number, run: number): string {
  return run <= 1 ? `${trigger}-${number}` : `${trigger}-${number}-${run}`;
}

/** Which run of item `number` a task name is (TRIGGER-N: 1, TRIGGER-N-3: 3); 0 when it is none of them. */
export function itemRun(trigger: string, number: number, name: string): number {
  const first = itemTaskName(trigger, number, 1);
  if (name === first) return 1;
  const run = name.startsWith(`${first}-`) ? Number(name.slice(first.length + 1)) : NaN;
  return Number.isInteger(run) && run >= 2 ? run : 0;
}

/** The item's task with the highest run (TRIGGER-N, TRIGGER-N-2, …): the one a resume or a report is about. */
export function newestOfItem<T extends { name: string; labels: Readonly<Record<string, string>> }>(
  trigger: string,
  number: number,
  tasks: readonly T[],
): T | undefined {
  const mine = tasks.filter((t) => t.labels[ITEM_LABEL] === String(number));
  return mine.sort((a, b) => itemRun(trigger, number, b.name) - itemRun(trigger, number, a.name))[0];
}

/** Tasks of one item, by the item label. */
function tasksOf(existing: ExistingTask[], number: number): ExistingTask[] {
  return existing.filter((t) => t.labels[ITEM_LABEL] === String(number));
}

/** The command mark of an item's tasks: the newest comment id any of them was created after. */
function commentMark(tasks: ExistingTask[]): number {
  return Math.max(0, ...tasks.map((t) => Number(t.labels[COMMENT_MARK_LABEL] ?? 0) || 0));
}

/**
 * What one item gets, ignoring limits. A command newer than everything decided whose author's permission
 * could not be read makes the item wait (it may be a permitted request): that item only, never the others.
 */
export function judgeItem(
  trigger: string,
  seen: ItemSeen,
  existing: ExistingTask[],
  rules: ItemRules,
  permissionOf: PermissionOf,
): ItemDecision {
  const { item } = seen;
  const mine = tasksOf(existing, item.number);
  const mark = commentMark(mine);
  const commands = judgeCommands(seen, rules, permissionOf);
  const command = commands.newest;
  if (commands.unknown && commands.unknown.id > Math.max(mark, command?.id ?? 0))
    return { kind: 'undecided', reason: commands.unknown.reason };
  const create = (run: number, comment?: ForgeComment): ItemDecision => ({
    kind: 'create',
    task: {
      name: itemTaskName(trigger, item.number, run),
      item,
      ...(comment ? { comment } : {}),
      labels: { [ITEM_LABEL]: String(item.number), [COMMENT_MARK_LABEL]: String(command?.id ?? 0) },
    },
  });
  const refused = commands.refused && commands.refused.id > Math.max(mark, command?.id ?? 0);
  const skip = (reason: SkipReason): ItemDecision => ({
    kind: 'skip',
    reason: refused && commands.refused ? commands.refused.reason : reason,
  });
  if (mine.length === 0) {
    if (command) return create(1, command);
    const why = whyNoMatch(item, rules);
    return why ? skip(why) : create(1);
  }
  // Done once: only a command newer than every task of the item runs it again, and only after they finished.
  if (!command || command.id <= mark) return skip('taskExists');
  if (mine.some((t) => !t.finished)) return { kind: 'skip', reason: 'taskRunning' };
  return create(nextRun(trigger, item.number, mine), command);
}

/** What to do for one item, ignoring limits: a task to create, or nothing. */
export function planItem(
  trigger: string,
  seen: ItemSeen,
  existing: ExistingTask[],
  rules: ItemRules,
  permissionOf: PermissionOf,
): PlannedTask | undefined {
  const decision = judgeItem(trigger, seen, existing, rules, permissionOf);
  return decision.kind === 'create' ? decision.task : undefined;
}

function nextRun(trigger: string, number: number, mine: ExistingTask[]): number {
  let run = 1;
  const names = new Set(mine.map((t) => t.name));
  while (names.has(itemTaskName(trigger, number, run))) run++;
  return run;
}

/** What planning a trigger's items needs: the items seen, the tasks it has, its rules and its limits. */
export interface PlanItemsInput {
  trigger: string;
  seen: ItemSeen[];
  existing: ExistingTask[];
  rules: ItemRules;
  permissionOf: PermissionOf;
  maxConcurrency: number;
  maxTotal?: number;
  /** Tasks this trigger created so far (its status; deleted tasks still count). */
  createdTotal: number;
}

/** The tasks to create for everything seen, lowest item number first, within maxConcurrency and maxTotal. */
export function planItems(input: PlanItemsInput): ItemPlan {
  const decisions = input.seen.map((s) => judgeItem(input.trigger, s, input.existing, input.rules, input.permissionOf));
  const wanted = decisions
    .flatMap((d) => (d.kind === 'create' ? [d.task] : []))
    .sort((a, b) => a.item.number - b.item.number);
  const room = roomFor(input);
  return {
    create: wanted.slice(0, room),
    held: Math.max(0, wanted.length - room),
    skipped: countSkips(decisions),
    undecided: input.seen.flatMap((s, i) => {
      const d = decisions[i];
      return d?.kind === 'undecided' ? [{ number: s.item.number, reason: clip(d.reason, UNDECIDED_REASON_MAX) }] : [];
    }),
  };
}

/**
 * What waits after a poll's plan: the undecided items (the plan's and the resumes', at most
 * UNDECIDED_ITEMS_MAX named in status) and whether the cursor stays, so they are polled again.
 */
export function pollWaits(plan: ItemPlan, resumes: UndecidedItem[]): { undecided?: UndecidedItem[]; hold: boolean } {
  const undecided = [...plan.undecided, ...resumes].slice(0, UNDECIDED_ITEMS_MAX);
  const hold = plan.held > 0 || undecided.length > 0;
  return undecided.length > 0 ? { undecided, hold } : { hold };
}

/** The skip decisions counted by reason. */
export function countSkips(decisions: ItemDecision[]): ItemsSkipped {
  const out: ItemsSkipped = {};
  for (const d of decisions) if (d.kind === 'skip') out[d.reason] = (out[d.reason] ?? 0) + 1;
  return out;
}

/** status.itemsSkipped after a pass: the counts so far plus this pass's (undefined while none). */
export function addSkips(before: ItemsSkipped | undefined, more: ItemsSkipped): ItemsSkipped | undefined {
  const out: ItemsSkipped = { ...before };
  for (const [reason, n] of Object.entries(more) as Array<[SkipReason, number]>) out[reason] = (out[reason] ?? 0) + n;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * A trigger's limits for a plan. createdTotal: the status counts tasks deleted since; the existing tasks
 * count when the status lags behind them (a status write lost before a restart).
 */
export function triggerLimits(
  spec: { maxConcurrency: number; maxTotal?: number },
  tasksCreated: number,
  existing: ExistingTask[],
): { maxConcurrency: number; maxTotal?: number; createdTotal: number } {
  const createdTotal = Math.max(tasksCreated, existing.length);
  return { maxConcurrency: spec.maxConcurrency, maxTotal: spec.maxTotal, createdTotal };
}

/** status.tasksActive after a plan: the unfinished tasks there were, and those it creates. */
export function activeAfter(existing: ExistingTask[], created: number): number {
  return existing.filter((t) => !t.finished).length + created;
}

/** How many tasks may be created now: the slots maxConcurrency leaves, within what maxTotal leaves. */
export function roomFor(input: {
  existing: ExistingTask[];
  maxConcurrency: number;
  maxTotal?: number;
  createdTotal: number;
}): number {
  const active = input.existing.filter((t) => !t.finished).length;
  const byConcurrency = Math.max(0, input.maxConcurrency - active);
  const byTotal = input.maxTotal === undefined ? Infinity : Math.max(0, input.maxTotal - input.createdTotal);
  return Math.min(byConcurrency, byTotal);
}
