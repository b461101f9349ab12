// The items part of a trigger pass: a forge poll's items (with its resume comments) and a webhook's delivered
// and held items become create, refuse and resume actions and the status they leave. Composes the rules of
// trigger-items.ts (planItems), trigger-held.ts (planWithHeld), trigger-resume.ts, trigger-report-plan.ts
// (itemBranch) and trigger-cursor.ts; asks for the permissions and PR heads it lacks instead of guessing.
import type { AgentTriggerStatus, ForgeSource, Permission, WebhookSource } from '../api/agent-trigger.ts';
import type { ForgeComment, ForgeKind } from '../api/forge-item.ts';
import { advancedCursor, type Poll } from './trigger-cursor.ts';
import { heldStatus, planWithHeld } from './trigger-held.ts';
import type { ItemRules, ItemSeen, PlannedTask } from './trigger-items.ts';
import { activeAfter, isCommand, isExcluded, planItems, triggerLimits } from './trigger-items.ts';
import { itemBranch, refusalComment } from './trigger-report-plan.ts';
import { newestTask, resumeCommand, splitResumeComments } from './trigger-resume.ts';
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

/** A forge source's rules: its own comments (the reports) never trigger, so the token's user joins excludeAuthors. */
export function itemRules(source: ForgeSource, self: string | undefined): ItemRules {
  return { ...source, excludeAuthors: self ? [...source.excludeAuthors, self] : source.excludeAuthors };
}

/** A poll's items: the resume comments handed on, the rest planned; the cursor moves once none is held. */
export function forgeItems(f: TriggerFacts, kind: ForgeKind, source: ForgeSource, poll: Poll): ItemsOutcome {
  const polled = poll.kind === 'listed' ? poll.polled : [];
  // Nothing new (GitHub's 304): only items held back last time may have room now.
  const split = splitResumeComments(poll.kind === 'listed' ? poll.seen : (f.heldSeen ?? []), source.command?.text);
  const resumes = f.canResume ? resumesWithTask(f, split.resumes) : [];
  const resumers = resumes.filter((r) => !r.comment.authorIsBot).map((r) => r.comment.author);
  const missing = unknownUsers(f, [...commandAuthors(split.commands, source), ...resumers]);
  if (missing.length > 0) return { ...NONE, lookups: missing.map((user) => ({ kind: 'permission', user })) };
  const plan = planItems({
    trigger: f.trigger.name,
    seen: split.commands,
    existing: f.tasks,
    rules: itemRules(source, f.self),
    permissionOf: (user) => f.permissions.get(user),
    ...triggerLimits(f.trigger.spec, f.status.tasksCreated, f.tasks),
  });
  const creates = createActions(f, plan.create);
  if (creates.lookups.length > 0) return creates;
  const record: Partial<AgentTriggerStatus> = {
    itemsSeen: (f.status.itemsSeen ?? 0) + polled.length,
    tasksActive: activeAfter(f.tasks, creates.created.length),
    // Held items are polled again: the cursor moves only when everything seen was handled.
    ...(plan.held === 0 ? advancedCursor(f.status, polled) : {}),
  };
  const actions = [...resumeActions(f, kind, source, resumes), ...creates.actions];
  return { actions, created: creates.created, record, lookups: [], heldSeen: plan.held > 0 ? split.commands : [] };
}

/** A webhook source's delivered items (none on its own pass) planned with those held for a slot before. */
export function webhookItems(
  f: TriggerFacts,
  source: WebhookSource,
  seen: ItemSeen[],
  permissionOf: (user: string) => Permission | undefined,
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
  const record = { ...heldStatus(f.status, plan), tasksActive: activeAfter(f.tasks, creates.created.length) };
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
      actions.push({
        kind: 'log',
        level: 'warn',
        fields: { item: number, reason: item.refused },
        message: 'item refused: no task',
      });
      if (spec.report?.comment && f.forge?.token)
        actions.push({ kind: 'refuse', number, key: `${name}/${p.name}`, body: refusalComment(p.name, item.refused) });
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
    const task = newestTask(f.tasks, f.trigger.name, comment.itemNumber);
    return task ? [{ comment, task }] : [];
  });
}

/** Each resume comment judged (trigger-resume.ts): a request for a permitted one, a log line for every one. */
function resumeActions(f: TriggerFacts, kind: ForgeKind, source: ForgeSource, resumes: ResumeFor[]): TriggerAction[] {
  return resumes.flatMap(({ comment, task }): TriggerAction[] => {
    const decision = resumeCommand({
      comment,
      forge: kind,
      command: source.command?.text,
      minPermission: source.command?.minPermission ?? 'write',
      permission: comment.authorIsBot ? undefined : f.permissions.get(comment.author),
      phase: task.status?.phase,
      handledToken: task.status?.resume?.handledToken,
    });
    const why = decision.kind === 'ignore' ? decision.why : undefined;
    const logged = info({ task: task.name, comment: comment.id, decision: decision.kind, why }, 'resume comment');
    if (decision.kind !== 'resume') return [logged];
    return [{ kind: 'resume', namespace: task.namespace, name: task.name, request: decision.request }, logged];
  });
}

/** Authors of command comments (bots never trigger): only their permission is asked, once per poll. */
function commandAuthors(seen: ItemSeen[], source: ForgeSource): string[] {
  const text = source.command?.text;
  if (!text) return [];
  return seen.flatMap((s) => s.comments.filter((c) => isCommand(c.body, text) && !c.authorIsBot).map((c) => c.author));
}

function unknownUsers(f: TriggerFacts, users: string[]): string[] {
  return [...new Set(users)].filter((u) => !f.permissions.has(u));
}

function info(fields: Record<string, unknown>, message: string): TriggerAction {
  return { kind: 'log', level: 'info', fields, message };
}
