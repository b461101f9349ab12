// Which forge items become tasks, as a pure function of what a poll (or a webhook) saw and the tasks the
// trigger already made. Task names are deterministic — TRIGGER-NUMBER, then TRIGGER-NUMBER-2, -3 for
// re-triggers — so a poll, a webhook and a restart that see the same item can never create it twice.
import { PERMISSIONS } from '../api/agent-trigger.ts';
import type { Permission } from '../api/agent-trigger.ts';
import type { ForgeComment, ForgeItem } from '../api/forge-item.ts';

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
}

/** Whether an author may never trigger: bots (no loops on the controller's own comments) and excludeAuthors. */
export function isExcluded(author: string, isBot: boolean, rules: Pick<ItemRules, 'excludeAuthors'>): boolean {
  if (isBot || /\[bot\]$/i.test(author)) return true;
  const lower = author.toLowerCase();
  return rules.excludeAuthors.some((a) => a.toLowerCase() === lower);
}

export function hasPermission(have: Permission | undefined, need: Permission): boolean {
  return have !== undefined && PERMISSIONS.indexOf(have) >= PERMISSIONS.indexOf(need);
}

/** A comment is a command when its first word is the command text ("/episodic", "/episodic please"). */
export function isCommand(body: string, text: string): boolean {
  const first = body.trimStart().split(/\s/, 1)[0];
  return first === text;
}

/** The newest command comment on the item from a permitted, non-excluded author. */
export function newestCommand(
  seen: ItemSeen,
  rules: ItemRules,
  permissionOf: (user: string) => Permission | undefined,
): ForgeComment | undefined {
  const command = rules.command;
  if (!command) return undefined;
  let newest: ForgeComment | undefined;
  for (const c of seen.comments) {
    if (!isCommand(c.body, command.text) || isExcluded(c.author, c.authorIsBot, rules)) continue;
    if (!hasPermission(permissionOf(c.author), command.minPermission)) continue;
    if (!newest || c.id > newest.id) newest = c;
  }
  return newest;
}

/** Open, by an author who may trigger, and carrying every label (an empty list with a command: commands only). */
export function matchesLabels(item: ForgeItem, rules: ItemRules): boolean {
  if (!item.open || isExcluded(item.author, item.authorIsBot, rules)) return false;
  if (rules.labels.length === 0) return !rules.command;
  const have = new Set(item.labels.map((l) => l.toLowerCase()));
  return rules.labels.every((l) => have.has(l.toLowerCase()));
}

/** The name of the run-th task of an item: TRIGGER-N, TRIGGER-N-2, … */
export function itemTaskName(trigger: string, number: number, run: number): string {
  return run <= 1 ? `${trigger}-${number}` : `${trigger}-${number}-${run}`;
}

/** Tasks of one item, by the item label. */
function tasksOf(existing: ExistingTask[], number: number): ExistingTask[] {
  return existing.filter((t) => t.labels[ITEM_LABEL] === String(number));
}

/** The command mark of an item's tasks: the newest comment id any of them was created after. */
function commentMark(tasks: ExistingTask[]): number {
  return Math.max(0, ...tasks.map((t) => Number(t.labels[COMMENT_MARK_LABEL] ?? 0) || 0));
}

/** What to do for one item, ignoring limits: a task to create, or nothing. */
export function planItem(
  trigger: string,
  seen: ItemSeen,
  existing: ExistingTask[],
  rules: ItemRules,
  permissionOf: (user: string) => Permission | undefined,
): PlannedTask | undefined {
  const { item } = seen;
  const mine = tasksOf(existing, item.number);
  const command = newestCommand(seen, rules, permissionOf);
  const labels = (comment?: ForgeComment): Record<string, string> => ({
    [ITEM_LABEL]: String(item.number),
    [COMMENT_MARK_LABEL]: String(Math.max(comment?.id ?? 0, command?.id ?? 0)),
  });
  if (mine.length === 0) {
    if (command)
      return { name: itemTaskName(trigger, item.number, 1), item, comment: command, labels: labels(command) };
    return matchesLabels(item, rules)
      ? { name: itemTaskName(trigger, item.number, 1), item, labels: labels() }
      : undefined;
  }
  // Done once: only a command newer than every task of the item runs it again, and only after they finished.
  if (!command || command.id <= commentMark(mine) || mine.some((t) => !t.finished)) return undefined;
  const run = nextRun(trigger, item.number, mine);
  return { name: itemTaskName(trigger, item.number, run), item, comment: command, labels: labels(command) };
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
  permissionOf: (user: string) => Permission | undefined;
  maxConcurrency: number;
  maxTotal?: number;
  /** Tasks this trigger created so far (its status; deleted tasks still count). */
  createdTotal: number;
}

/** The tasks to create for everything seen, lowest item number first, within maxConcurrency and maxTotal. */
export function planItems(input: PlanItemsInput): ItemPlan {
  const wanted = input.seen
    .map((s) => planItem(input.trigger, s, input.existing, input.rules, input.permissionOf))
    .filter((p): p is PlannedTask => p !== undefined)
    .sort((a, b) => a.item.number - b.item.number);
  const room = roomFor(input);
  return { create: wanted.slice(0, room), held: Math.max(0, wanted.length - room) };
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
