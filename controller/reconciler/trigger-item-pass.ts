// The items part of a trigger pass: a forge poll's items (with its resume comments) and a webhook's delivered
// and held items become create, refuse and resume actions and the status they leave. Composes the rules of
// trigger-items.ts (planItems), trigger-held.ts (planWithHeld), trigger-resume.ts, trigger-report-plan.ts
// (itemBranch) and trigger-cursor.ts; asks for the permissions and PR heads it lacks instead of guessing.
import type { AgentTriggerStatus, ForgeSource, UndecidedItem, WebhookSource } from '../api/agent-trigger.ts';
import type { ForgeComment, ForgeKind } from '../api/forge-item.ts';
import { isReportComment } from '../api/forge-item.ts';
import { advancedCursor, type Poll } from './trigger-cursor.ts';
import { heldStatus, planWithHeld } from './trigger-held.ts';
import type { ItemSeen, PermissionOf, PlannedTask } from './trigger-items.ts';
import {
  activeAfter,
  addSkips,
  isCommand,
  isExcluded,
  newestOfItem,
  planItems,
  pollWaits,
  triggerLimits,
} from './trigger-items.ts';
import { itemReportKey } from './trigger-report.ts';
import { itemBranch, refusalComment } from './trigger-report-plan.ts';
import { resumeCommand, splitResumeComments } from './trigger-resume.ts';
import { renderTaskSpec } from './trigger-template.ts';
import type { TriggerAction, TriggerFacts, TriggerLookup, TriggerTask } from './trigger-types.ts';

/** The items part of a pass: its actions, the tasks it creates, and the status once they are created. */
export interface ItemsOutcome {
  actions: TriggerAction[];
  created: PlannedTask[];
  record: Partial<AgentTriggerStatus>;
  lookups: TriggerLookup[];
  /** A forge poll's items held for maxConcurrency (the next poll's 304 lists nothing). */
  heldSeen?: ItemSeen[];
}

const NONE: ItemsOutcome = { actions: [], created: [], record: {}, lookups: [] };

/**
 * A poll's items: the resume comments handed on, the rest planned (judgeItem: skips counted by reason, an
 * item whose command's author could not be read waits). Loops are prevented by the marker on episodic's own
 * comments (isReportComment), not by excluding the token's user. The cursor moves once nothing waits.
 */
export function forgeItems(f: TriggerFacts, kind: ForgeKind, source: ForgeSource, poll: Poll): ItemsOutcome {
  const polled = poll.kind === 'listed' ? poll.polled : [];
  // Nothing new (GitHub's 304): only items held back last time may have room now.
  const looked = poll.kind === 'listed' ? poll.seen : (f.heldSeen ?? []);
  const split = splitResumeComments(looked, source.command?.text);
  const resumes = f.canResume ? resumesWithTask(f, split.resumes) : [];
  const resumers = resumes.filter((r) => !r.comment.authorIsBot).map((r) => r.comment.author);
  const missing = unknownUsers(f, [...commandAuthors(split.commands, source), ...resumers]);
  if (missing.length > 0) return { ...NONE, lookups: missing.map((user) => ({ kind: 'permission', user })) };
  const plan = planItems({
    trigger: f.trigger.name,
    seen: split.commands,
    existing: f.tasks,
    rules: source,
    permissionOf: permissionsOf(f),
    ...triggerLimits(f.trigger.spec, f.status.tasksCreated, f.tasks),
  });
  const creates = createActions(f, plan.create);
  if (creates.lookups.length > 0) return creates;
  const resumed = resumeActions(f, kind, source, resumes);
  const waits = pollWaits(plan, resumed.undecided);
  const record: Partial<AgentTriggerStatus> = {
    itemsSeen: (f.status.itemsSeen ?? 0) + polled.length,
    tasksActive: activeAfter(f.tasks, creates.created.length),
    itemsUndecided: waits.undecided,
    // A 304's held items were counted when they were listed.
    ...(poll.kind === 'listed' ? { itemsSkipped: addSkips(f.status.itemsSkipped, plan.skipped) } : {}),
    // Held and undecided items are polled again: the cursor moves only when everything seen was handled.
    ...(waits.hold ? {} : advancedCursor(f.status, polled)),
  };
  const actions = [...resumed.actions, ...creates.actions];
  if (waits.undecided) actions.push(warnLog({ undecided: waits.undecided }, 'items wait'));
  return { actions, created: creates.created, record, lookups: [], heldSeen: waits.hold ? looked : [] };
}

/** A webhook source's delivered items (none on its own pass) planned with those held for a slot before. */
export function webhookItems(
  f: TriggerFacts,
  source: WebhookSource,
  seen: ItemSeen[],
  permissionOf: PermissionOf,
): ItemsOutcome {
  const plan = planWithHeld({
    trigger: f.trigger.name,
    seen,
    held: f.status.heldItems ?? [],
    existing: f.tasks,
    rules: source,
    permissionOf,
    ...triggerLimits(f.trigger.spec, f.status.tasksCreated, f.tasks),
  });
  // spec.report: the item's work goes to its branch, as a poll's would (the forge only when reporting).
  if (plan.create.length > 0 && f.trigger.spec.report && !f.forge) return { ...NONE, lookups: [{ kind: 'forge' }] };
  const creates = createActions(f, plan.create);
  if (creates.lookups.length > 0) return creates;
  const actions: TriggerAction[] = [];
  if (plan.held.length > 0)
    actions.push(info({ held: plan.held.map((h) => h.number) }, 'webhook items held for a slot'));
  actions.push(...creates.actions);
  if (plan.overflow > 0) actions.push(info({ dropped: plan.overflow }, 'webhook items past the held cap dropped'));
  const record = {
    ...heldStatus(f.status, plan),
    tasksActive: activeAfter(f.tasks, creates.created.length),
    itemsSkipped: addSkips(f.status.itemsSkipped, plan.skipped),
  };
  return { actions, created: creates.created, record, lookups: [] };
}

/** A delivery for a repository other than the webhook source's: ignored (the source names its repo). */
export function otherRepository(source: WebhookSource, repo: string | undefined): boolean {
  return !!source.repo && repo?.toLowerCase() !== source.repo.toLowerCase();
}

/** The author of a delivered comment whose permission decides (a command that may trigger), if any. */
export function commenterToAsk(
  source: WebhookSource,
  comment: Pick<ForgeComment, 'author' | 'authorIsBot' | 'body'> | undefined,
): string | undefined {
  if (!source.command || !source.repo || !comment) return undefined;
  if (!isCommand(comment.body, source.command.text) || isExcluded(comment.author, comment.authorIsBot, source))
    return undefined;
  return comment.author;
}

/** Each planned task created with its item's branch, or refused (and said on the item); PR heads to read first. */
function createActions(f: TriggerFacts, planned: PlannedTask[]): ItemsOutcome {
  const { spec, name } = f.trigger;
  const actions: TriggerAction[] = [];
  const created: PlannedTask[] = [];
  const lookups: TriggerLookup[] = [];
  for (const p of planned) {
    const rendered = renderTaskSpec(spec.template.spec, { item: p.item, comment: p.comment });
    const number = p.item.number;
    const item = itemBranch(rendered, f.trigger, p.item, f.pullRequests.get(number), f.forge !== undefined);
    if ('needPull' in item) lookups.push({ kind: 'pullRequest', number });
    else if ('refused' in item) {
      actions.push(warnLog({ item: number, reason: item.refused }, 'item refused: no task'));
      // The item's one comment (keyed by its first task), as its reports would write it.
      const key = itemReportKey(name, number);
      if (spec.report?.comment && f.forge?.token)
        actions.push({ kind: 'refuse', number, key, body: refusalComment(p.name, item.refused) });
    } else {
      actions.push({ kind: 'create', name: p.name, spec: item.spec, labels: { ...spec.template.labels, ...p.labels } });
      created.push(p);
    }
  }
  return lookups.length > 0 ? { ...NONE, lookups } : { actions, created, record: {}, lookups };
}

interface ResumeFor {
  comment: ForgeComment;
  task: TriggerTask;
}

/** Resume comments on items that have a task (the item's newest); the others go nowhere. */
function resumesWithTask(f: TriggerFacts, resumes: ForgeComment[]): ResumeFor[] {
  return resumes.flatMap((comment) => {
    const task = newestOfItem(f.trigger.name, comment.itemNumber, f.tasks);
    return task ? [{ comment, task }] : [];
  });
}

/**
 * Each resume comment judged (trigger-resume.ts): a request for a permitted one, a log line for every one;
 * the items whose commenter's permission could not be read wait (undecided).
 */
function resumeActions(
  f: TriggerFacts,
  kind: ForgeKind,
  source: ForgeSource,
  resumes: ResumeFor[],
): { actions: TriggerAction[]; undecided: UndecidedItem[] } {
  const undecided: UndecidedItem[] = [];
  const actions = resumes.flatMap(({ comment, task }): TriggerAction[] => {
    const decision = resumeCommand({
      comment,
      forge: kind,
      command: source.command?.text,
      minPermission: source.command?.minPermission ?? 'write',
      permission: comment.authorIsBot ? undefined : f.permissions.get(comment.author),
      phase: task.status?.phase,
      handledToken: task.status?.resume?.handledToken,
    });
    const why = decision.kind === 'resume' ? undefined : decision.why;
    const logged = info({ task: task.name, comment: comment.id, decision: decision.kind, why }, 'resume comment');
    if (decision.kind === 'undecided') undecided.push({ number: comment.itemNumber, reason: decision.why });
    if (decision.kind !== 'resume') return [logged];
    return [{ kind: 'resume', namespace: task.namespace, name: task.name, request: decision.request }, logged];
  });
  return { actions, undecided };
}

/** Authors of command comments who may trigger (not bots, excludeAuthors or a report): asked once per poll. */
function commandAuthors(seen: ItemSeen[], source: ForgeSource): string[] {
  const text = source.command?.text;
  if (!text) return [];
  const asks = (c: ForgeComment) =>
    isCommand(c.body, text) && !isReportComment(c.body) && !isExcluded(c.author, c.authorIsBot, source);
  return seen.flatMap((s) => s.comments.filter(asks).map((c) => c.author));
}

/** The permissions looked up this pass (an unreadable one is `unknown`, with why: readPermission). */
function permissionsOf(f: TriggerFacts): PermissionOf {
  return (user) => f.permissions.get(user);
}

function unknownUsers(f: TriggerFacts, users: string[]): string[] {
  return [...new Set(users)].filter((u) => !f.permissions.has(u));
}

function info(fields: Record<string, unknown>, message: string): TriggerAction {
  return { kind: 'log', level: 'info', fields, message };
}

function warnLog(fields: Record<string, unknown>, message: string): TriggerAction {
  return { kind: 'log', level: 'warn', fields, message };
}
