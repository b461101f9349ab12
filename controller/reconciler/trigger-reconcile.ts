// The trigger reconciler: a pure function of what a trigger's runner gathered (its spec and status, its
// tasks, what the forge or a webhook showed, the clock and jitter) → the status to start from, the actions in
// the order they are done, and when the next pass is due. Schedules, forge polls and webhook items alike;
// the runner (sources/triggers/trigger-runner.ts) gathers, asks, performs and decides nothing.
import { clip, TRIGGER_ERROR_MAX } from '../api/bounds.ts';
import type { AgentTriggerStatus, ScheduleSource } from '../api/agent-trigger.ts';
import { heldOverflowError } from './trigger-held.ts';
import { forgeItems, type ItemsOutcome, webhookItems } from './trigger-item-pass.ts';
import { activeAfter, triggerLimits } from './trigger-items.ts';
import { reportPlan } from './trigger-report-plan.ts';
import { decideSchedule, pastHistory, TICK_LABEL, tickMinute } from './trigger-schedule.ts';
import { renderTaskSpec } from './trigger-template.ts';
import {
  failedPassAt,
  SCHEDULE_IDLE_MS,
  SUSPENDED_RECHECK_MS,
  type TriggerFailure,
  WEBHOOK_PASS_MS,
} from './trigger-timing.ts';
import type { ActionOutcome, TriggerAction, TriggerDecision, TriggerFacts, TriggerLookup } from './trigger-types.ts';

export type * from './trigger-types.ts';

/** A pass asks for facts in at most this many rounds (the forge, permissions, PR heads, items): more is a bug. */
export const MAX_LOOKUP_ROUNDS = 4;

export function reconcileTrigger(f: TriggerFacts): TriggerDecision {
  if (f.failure) return failedPass(f, f.failure);
  if (f.pass === 'delivery') return deliveryPass(f);
  if (f.pass === 'report') return reportOnlyPass(f);
  return timerPass(f);
}

/** The status after an action, from what it came to: tasks counted, reports remembered, the pass recorded. */
export function recordOutcome(
  status: AgentTriggerStatus,
  action: TriggerAction,
  outcome: ActionOutcome,
): AgentTriggerStatus {
  if (action.kind === 'record') return { ...status, ...action.status };
  if (action.kind === 'create' && outcome.kind === 'created')
    return { ...status, tasksCreated: (status.tasksCreated ?? 0) + 1 };
  if (action.kind !== 'report' || outcome.kind !== 'reported') return status;
  const { task, next } = action.report;
  const reported = { ...status.reported, [task]: next };
  if (!outcome.pullRequest) return { ...status, reported };
  return { ...status, reported, pullRequests: { ...status.pullRequests, [task]: outcome.pullRequest } };
}

const EMPTY: ItemsOutcome = { actions: [], created: [], record: {}, lookups: [] };

function timerPass(f: TriggerFacts): TriggerDecision {
  const { spec } = f.trigger;
  const base: AgentTriggerStatus = { ...f.status, lastPollAt: f.now.toISOString() };
  const after = (ms: number) => new Date(f.now.getTime() + ms);
  if (spec.suspend) return finish(base, EMPTY, after(SUSPENDED_RECHECK_MS));
  const { schedule, gitea, github, webhook } = spec.source;
  if (schedule) return schedulePass(f, base, schedule);
  const forge = gitea ?? github;
  if (forge) {
    if (!f.poll && f.stage !== 'reports') return failedPass(f, { kind: 'other', message: 'the forge was not polled' });
    const items = f.poll && f.stage !== 'reports' ? forgeItems(f, gitea ? 'gitea' : 'github', forge, f.poll) : EMPTY;
    const target = { kind: forge.kind, resumePermission: forge.command?.minPermission };
    return withReports(f, base, items, target, after(forge.pollSeconds * 1000));
  }
  if (webhook) {
    // Held items (maxConcurrency) have no poll to bring them back: a freed slot takes them here.
    const items = f.stage === 'reports' ? EMPTY : webhookItems(f, webhook, [], () => undefined);
    const target = { kind: 'issues' as const, resumePermission: webhook.command?.minPermission };
    return withReports(f, base, items, target, after(WEBHOOK_PASS_MS));
  }
  return failedPass(f, { kind: 'other', message: 'no source' });
}

function schedulePass(f: TriggerFacts, base: AgentTriggerStatus, schedule: ScheduleSource): TriggerDecision {
  const { name, spec } = f.trigger;
  // No backfill: a trigger first seen counts ticks from now on; after that from the newest tick handled.
  const lastTick = base.lastTick ?? f.now.toISOString();
  const decision = decideSchedule({
    trigger: name,
    schedule,
    lastTick: new Date(lastTick),
    now: f.now,
    existing: f.tasks,
    ...triggerLimits(spec, base.tasksCreated, f.tasks),
  });
  const actions: TriggerAction[] = [];
  let active = activeAfter(f.tasks, 0);
  if (decision.action === 'skip') actions.push(info({ tick: decision.tick.toISOString() }, decision.reason));
  if (decision.action === 'create') {
    const tick = decision.tick;
    // Replace: the running tasks go first (deleted, as a person deleting them would), then the new one.
    for (const replaced of decision.replace) actions.push({ kind: 'delete', name: replaced });
    const labels = { ...spec.template.labels, [TICK_LABEL]: tickMinute(tick) };
    const task = renderTaskSpec(spec.template.spec, { tick: tick.toISOString() });
    actions.push({ kind: 'create', name: decision.name, spec: task, labels });
    active += 1 - decision.replace.length;
  }
  // The tick is handled once its task is created: a failed create is tried again after the backoff.
  const record = { lastTick: decision.action === 'wait' ? lastTick : decision.tick.toISOString(), tasksActive: active };
  const next = decision.next ?? new Date(f.now.getTime() + SCHEDULE_IDLE_MS);
  return finish(base, { ...EMPTY, actions, record }, next, historyDeletes(f, schedule));
}

/**
 * historyLimit: the finished tasks past it, deleted. Counted over the tasks as the pass found them; a task's
 * finish wakes a pass (trigger-timing.ts wakeOnPhase) or `run`'s report pass, so the one that just finished
 * counts at once (waiting for the next tick kept historyLimit + 1).
 */
function historyDeletes(f: TriggerFacts, schedule: ScheduleSource): TriggerAction[] {
  return pastHistory(f.tasks, schedule.historyLimit).flatMap((task): TriggerAction[] => [
    { kind: 'delete', name: task },
    info({ task }, 'deleted a finished task past historyLimit'),
  ]);
}

interface ReportTarget {
  kind: 'issues' | 'pullRequests';
  resumePermission?: string;
}

/** A poll's or a webhook pass's items; spec.report follows as the pass's second stage, over the tasks then. */
function withReports(
  f: TriggerFacts,
  base: AgentTriggerStatus,
  items: ItemsOutcome,
  target: ReportTarget,
  next: Date,
): TriggerDecision {
  if (f.stage === 'reports') {
    const reports = reportsFor(f, f.status, target);
    if (reports.lookups.length > 0) return lookup(f, reports.lookups);
    const actions: TriggerAction[] = [{ kind: 'record', status: reports.record }, ...reports.actions];
    return { status: f.status, actions, nextPassAt: next, lookups: [], failures: 0 };
  }
  if (items.lookups.length > 0) return lookup(f, items.lookups);
  return { ...finish(base, items, next), reportsNext: !!f.trigger.spec.report };
}

/** spec.report: a report action per task whose item is behind; needs the token (its user writes the comments). */
function reportsFor(f: TriggerFacts, base: AgentTriggerStatus, target: ReportTarget): ItemsOutcome {
  if (!f.trigger.spec.report) return EMPTY;
  if (!f.forge) return { ...EMPTY, lookups: [{ kind: 'forge' }] };
  if (!f.forge.token)
    return { ...EMPTY, actions: [{ kind: 'fail', message: 'spec.report needs a token (tokenEnv or tokenSecretRef)' }] };
  const plan = reportPlan({
    trigger: f.trigger,
    tasks: f.tasks,
    status: base,
    kind: target.kind,
    resumePermission: target.resumePermission,
    items: f.items,
    now: f.now,
  });
  const pullRequest = target.kind === 'pullRequests';
  if (plan.needItems.length > 0)
    return { ...EMPTY, lookups: plan.needItems.map((number) => ({ kind: 'item', number, pullRequest })) };
  return {
    ...EMPTY,
    actions: plan.reports.map((report) => ({ kind: 'report', report })),
    record: { reported: plan.reported, pullRequests: plan.pullRequests },
  };
}

/** A successful timer pass: its actions, then the record (errors cleared, the next pass), then what follows it. */
function finish(
  base: AgentTriggerStatus,
  items: ItemsOutcome,
  next: Date,
  afterRecord: TriggerAction[] = [],
): TriggerDecision {
  const status = { ...items.record, rateLimitedUntil: undefined, nextPollAt: next.toISOString() };
  const record: TriggerAction = {
    kind: 'record',
    status: { ...status, lastError: heldOverflowError({ ...base, ...status }) },
    ...(items.heldSeen ? { poll: { held: items.heldSeen } } : {}),
  };
  return {
    status: base,
    actions: [...items.actions, record, ...afterRecord],
    nextPassAt: next,
    lookups: [],
    failures: 0,
  };
}

/** Items a webhook delivered, judged like a poll result; a suspended trigger creates nothing. No report here. */
function deliveryPass(f: TriggerFacts): TriggerDecision {
  const source = f.trigger.spec.source.webhook;
  if (f.trigger.spec.suspend || !source)
    return { status: undefined, actions: [info({}, 'suspended: delivery ignored')], lookups: [], failures: f.failures };
  const seen = f.delivered ?? [];
  const items = webhookItems(f, source, seen, (user) => f.permissions.get(user));
  if (items.lookups.length > 0) return lookup(f, items.lookups);
  const outcome = { ...items.record, itemsSeen: (f.status.itemsSeen ?? 0) + seen.length };
  const lastError = heldOverflowError({ ...f.status, ...outcome }) ?? f.status.lastError;
  const record: TriggerAction = { kind: 'record', status: { ...outcome, lastError } };
  return { status: f.status, actions: [...items.actions, record], lookups: [], failures: f.failures };
}

/**
 * No poll: once `run` settled, so the comments show how its tasks ended and a schedule keeps only historyLimit
 * finished tasks (the one that just finished counts). A schedule's status is left as it is.
 */
function reportOnlyPass(f: TriggerFacts): TriggerDecision {
  const { spec } = f.trigger;
  const { schedule } = spec.source;
  if (schedule) return { status: undefined, actions: historyDeletes(f, schedule), lookups: [], failures: f.failures };
  if (!spec.report) return { status: undefined, actions: [], lookups: [], failures: f.failures };
  const forge = spec.source.gitea ?? spec.source.github;
  const target = forge
    ? { kind: forge.kind, resumePermission: forge.command?.minPermission }
    : { kind: 'issues' as const, resumePermission: spec.source.webhook?.command?.minPermission };
  const reports = reportsFor(f, f.status, target);
  if (reports.lookups.length > 0) return lookup(f, reports.lookups);
  const actions: TriggerAction[] = [{ kind: 'record', status: reports.record }, ...reports.actions];
  return { status: f.status, actions, lookups: [], failures: f.failures };
}

/** A failed pass: the error in status and the backoff; a report pass only says so, a delivery fails as it is. */
function failedPass(f: TriggerFacts, failure: TriggerFailure): TriggerDecision {
  const message = clip(failure.message, TRIGGER_ERROR_MAX);
  if (f.pass === 'delivery') return { status: undefined, actions: [], lookups: [], failures: f.failures };
  if (f.pass === 'report') {
    const schedule = !!f.trigger.spec.source.schedule;
    const logged = warn({ err: message }, schedule ? 'pruning failed' : 'reporting back failed');
    return { status: schedule ? undefined : f.status, actions: [logged], lookups: [], failures: f.failures };
  }
  const attempt = f.failures + 1;
  const pollSeconds = (f.trigger.spec.source.gitea ?? f.trigger.spec.source.github)?.pollSeconds;
  const next = failedPassAt(failure, attempt, pollSeconds, f.now, f.jitter);
  const status: AgentTriggerStatus = {
    ...f.status,
    lastPollAt: f.now.toISOString(),
    lastError: message,
    rateLimitedUntil: failure.kind === 'rateLimited' ? failure.resetAt.toISOString() : undefined,
    nextPollAt: next.toISOString(),
  };
  const logged = warn({ err: message, failures: attempt }, 'trigger pass failed');
  return { status, actions: [logged], nextPassAt: next, lookups: [], failures: attempt };
}

function lookup(f: TriggerFacts, lookups: TriggerLookup[]): TriggerDecision {
  return { status: undefined, actions: [], lookups, failures: f.failures };
}

function info(fields: Record<string, unknown>, message: string): TriggerAction {
  return { kind: 'log', level: 'info', fields, message };
}

function warn(fields: Record<string, unknown>, message: string): TriggerAction {
  return { kind: 'log', level: 'warn', fields, message };
}
