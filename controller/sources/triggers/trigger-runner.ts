// One pass of a trigger — a schedule's due tick or a forge poll — turned into created tasks through the one
// CreatedTasks port (local: spec documents under the state dir; cluster: AgentTasks with an ownerReference),
// and its status. The rules are the pure ones of reconciler/trigger-*.ts; this file does the I/O around them.
// Names are deterministic, so a second pass, a restart or a lost status never creates a task twice.
import { clip, TRIGGER_ERROR_MAX } from '../../api/bounds.ts';
import type { Logger } from 'pino';
import type { AgentTaskStatus } from '../../api/agent-task-status.ts';
import type { AgentTriggerSpec, AgentTriggerStatus, ForgeSource, ScheduleSource } from '../../api/agent-trigger.ts';
import { AgentTriggerStatusSchema } from '../../api/agent-trigger.ts';
import type { Clock } from '../../core/clock.ts';
import type { CreatedTasks, TaskOwner } from '../../core/created-tasks.ts';
import type { TriggerCounters } from '../../metrics/trigger-metrics.ts';
import type { Forge } from '../../forge/types.ts';
import type { ForgeComment, ForgeKind } from '../../api/forge-item.ts';
import { ForgeRateLimitedError, ForgeRequestError, ForgeUnavailableError } from '../../forge/types.ts';
import type { ExistingTask, ItemRules, ItemSeen, PermissionOf } from '../../reconciler/trigger-items.ts';
import { activeAfter, addSkips, planItems, pollWaits, triggerLimits } from '../../reconciler/trigger-items.ts';
import { decideSchedule, pastHistory, TICK_LABEL } from '../../reconciler/trigger-schedule.ts';
import { itemReportKey } from '../../reconciler/trigger-report.ts';
import { renderTaskSpec } from '../../reconciler/trigger-template.ts';
import { advanceCursor, commandPermissions, pollForge, TriggerForges } from './forge-poll.ts';
import { handleResumes, type ResumeRequest, splitResumeComments } from './resume-comments.ts';
import {
  type ReportSource,
  refusalComment,
  reportTarget,
  reportTriggerTasks,
  withItemBranch,
} from './trigger-reports.ts';
import { createWebhookItems, heldOverflowError, type WebhookPlanPort } from './webhook-items.ts';

export interface RunnableTrigger {
  key: string;
  namespace: string;
  name: string;
  spec: AgentTriggerSpec;
  owner: TaskOwner;
}

export interface TriggerStatusStore {
  read(key: string): AgentTriggerStatus | undefined;
  write(key: string, status: AgentTriggerStatus): Promise<void>;
}

export interface TriggerDeps {
  created: CreatedTasks;
  /** Whether a task has finished (a terminal phase); unknown tasks have not. */
  finished(namespace: string, name: string): boolean;
  status: TriggerStatusStore;
  clock: Clock;
  /** Resolves a token or secret: local reads the environment variable the spec names. */
  secret(
    source: { tokenEnv?: string; tokenSecretRef?: { name: string; key: string } },
    namespace: string,
  ): Promise<string | undefined>;
  counters?: TriggerCounters;
  /** A permitted `/episodic resume` comment: the resume request `episodic resume` makes, for that task. */
  requestResume?(namespace: string, name: string, request: ResumeRequest): Promise<void> | void;
  /** spec.report: a task's status as recorded (phase, step, episodes, cost, reason, workspace changes). */
  taskStatus?(namespace: string, name: string): AgentTaskStatus | undefined;
  logger: Logger;
}

/** Backoff after a failed poll doubles from pollSeconds up to this. */
const MAX_BACKOFF_MS = 15 * 60_000;
const RETRY_MS = 5_000;

export class TriggerRunner {
  private readonly deps: TriggerDeps;
  /** Consecutive failed polls per trigger: the backoff. */
  private readonly failures = new Map<string, number>();
  /** One Forge per trigger: GitHub's ETags and the token's login live in it. */
  private readonly forges = new TriggerForges();
  /** Items a poll held back (maxConcurrency): a 304 next time must not forget them. */
  private readonly held = new Map<string, ItemSeen[]>();
  /** Per trigger: passes and deliveries read and write its status one at a time. */
  private readonly turns = new Map<string, Promise<unknown>>();

  constructor(deps: TriggerDeps) {
    this.deps = deps;
  }

  /** One pass; returns when the next one is due. Never throws: a failure is in status and backs off. */
  pass(trigger: RunnableTrigger): Promise<Date> {
    return this.inTurn(trigger.key, () => this.passNow(trigger));
  }

  private async passNow(trigger: RunnableTrigger): Promise<Date> {
    const now = this.deps.clock.now();
    const before = AgentTriggerStatusSchema.parse(this.deps.status.read(trigger.key) ?? {});
    const status: AgentTriggerStatus = { ...before, lastPollAt: now.toISOString() };
    let next: Date;
    try {
      if (trigger.spec.suspend) next = new Date(now.getTime() + 60_000);
      else if (trigger.spec.source.schedule)
        next = await this.schedulePass(trigger, trigger.spec.source.schedule, status, now);
      else if (trigger.spec.source.gitea)
        next = await this.forgePass(trigger, 'gitea', trigger.spec.source.gitea, status, now);
      else if (trigger.spec.source.github)
        next = await this.forgePass(trigger, 'github', trigger.spec.source.github, status, now);
      else if (trigger.spec.source.webhook) next = await this.webhookPass(trigger, status, now);
      else throw new Error('no source');
      this.failures.delete(trigger.key);
      status.lastError = heldOverflowError(status);
      status.rateLimitedUntil = undefined;
    } catch (err) {
      next = this.backoff(trigger, err, status, now);
    }
    status.nextPollAt = next.toISOString();
    try {
      await this.deps.status.write(trigger.key, status);
    } catch (err) {
      // Passes run on timers: a refused status write (apiserver busy, an older CRD) must not escape them.
      this.deps.logger.warn({ trigger: trigger.key, err: (err as Error).message }, 'writing trigger status failed');
      return new Date(Math.min(next.getTime(), now.getTime() + RETRY_MS));
    }
    return next;
  }

  private backoff(trigger: RunnableTrigger, err: unknown, status: AgentTriggerStatus, now: Date): Date {
    const n = (this.failures.get(trigger.key) ?? 0) + 1;
    this.failures.set(trigger.key, n);
    status.lastError = clip((err as Error).message, TRIGGER_ERROR_MAX);
    this.deps.logger.warn({ trigger: trigger.key, err: status.lastError, failures: n }, 'trigger pass failed');
    // A rate limit waits for the forge's reset, not a guess.
    if (err instanceof ForgeRateLimitedError) {
      status.rateLimitedUntil = err.resetAt.toISOString();
      return new Date(Math.max(err.resetAt.getTime(), now.getTime() + 1000));
    }
    status.rateLimitedUntil = undefined;
    // A forge failing (down, or refusing the token) waits a poll interval; anything else (the apiserver busy,
    // a file) is retried sooner.
    const forgeFailed = err instanceof ForgeUnavailableError || err instanceof ForgeRequestError;
    const source = trigger.spec.source.gitea ?? trigger.spec.source.github;
    const base = forgeFailed ? (source?.pollSeconds ?? 60) * 1000 : RETRY_MS;
    return new Date(now.getTime() + Math.min(base * 2 ** (n - 1), MAX_BACKOFF_MS));
  }

  private async existing(trigger: RunnableTrigger): Promise<ExistingTask[]> {
    const tasks = await this.deps.created.list(trigger.owner);
    return tasks.map((t) => ({ name: t.name, labels: t.labels, finished: this.deps.finished(t.namespace, t.name) }));
  }

  private async schedulePass(
    trigger: RunnableTrigger,
    schedule: ScheduleSource,
    status: AgentTriggerStatus,
    now: Date,
  ): Promise<Date> {
    const existing = await this.existing(trigger);
    // First sight: ticks count from now on (no backfill); after that from the newest handled tick.
    const lastTick = status.lastTick ? new Date(status.lastTick) : now;
    status.lastTick ??= now.toISOString();
    const decision = decideSchedule({
      trigger: trigger.name,
      schedule,
      lastTick,
      now,
      existing,
      ...triggerLimits(trigger.spec, status.tasksCreated, existing),
    });
    if (decision.action !== 'wait') status.lastTick = decision.tick.toISOString();
    if (decision.action === 'skip')
      this.deps.logger.info({ trigger: trigger.key, tick: decision.tick }, decision.reason);
    if (decision.action === 'create') {
      const minute = String(Math.floor(decision.tick.getTime() / 60_000));
      const spec = renderTaskSpec(trigger.spec.template.spec, { tick: decision.tick.toISOString() });
      // Replace: the running tasks go first (deleted, as a person deleting them would), then the new one.
      for (const name of decision.replace) await this.deps.created.delete(trigger.owner, name);
      await this.create(trigger, decision.name, spec, { [TICK_LABEL]: minute }, status);
    }
    status.tasksActive = activeAfter(await this.pruneHistory(trigger, schedule), 0);
    return decision.next ?? new Date(now.getTime() + 3_600_000);
  }

  /** Deletes the finished tasks past historyLimit; returns the tasks left. */
  private async pruneHistory(trigger: RunnableTrigger, schedule: ScheduleSource): Promise<ExistingTask[]> {
    const existing = await this.existing(trigger);
    const past = new Set(pastHistory(existing, schedule.historyLimit));
    for (const name of past) {
      await this.deps.created.delete(trigger.owner, name);
      this.deps.logger.info({ trigger: trigger.key, task: name }, 'deleted a finished task past historyLimit');
    }
    return existing.filter((t) => !past.has(t.name));
  }

  /** A webhook source has nothing to poll: its pass counts the active tasks (deliveries create them) and reports. */
  private async webhookPass(trigger: RunnableTrigger, status: AgentTriggerStatus, now: Date): Promise<Date> {
    const source = trigger.spec.source.webhook;
    // Held items (maxConcurrency) have no poll to bring them back: a freed slot takes them here.
    if (source) await createWebhookItems(this.webhookPort, trigger, [], source, () => undefined, status);
    await this.reportAll(trigger, status);
    return new Date(now.getTime() + 60_000);
  }

  /**
   * Items a webhook delivered, judged like a poll result (planItems: the same rules, the same names, so a
   * delivery, a poll and a restart agree on one task per item). Throws when a task cannot be written: the
   * delivery then fails and the forge may redeliver it. A suspended trigger creates nothing.
   */
  itemsArrived(
    trigger: RunnableTrigger,
    seen: ItemSeen[],
    rules: ItemRules,
    permissionOf: PermissionOf,
  ): Promise<void> {
    return this.inTurn(trigger.key, async () => {
      if (trigger.spec.suspend) return this.deps.logger.info({ trigger: trigger.key }, 'suspended: delivery ignored');
      const status = AgentTriggerStatusSchema.parse(this.deps.status.read(trigger.key) ?? {});
      await createWebhookItems(this.webhookPort, trigger, seen, rules, permissionOf, status);
      status.itemsSeen = (status.itemsSeen ?? 0) + seen.length;
      status.lastError = heldOverflowError(status) ?? status.lastError;
      await this.deps.status.write(trigger.key, status);
    });
  }

  private readonly webhookPort: WebhookPlanPort = {
    existing: (trigger) => this.existing(trigger),
    log: (fields, message) => this.deps.logger.info(fields, message),
    // spec.report: the item's work goes to its branch, as a poll's would (the forge only when reporting).
    createAll: async (trigger, create, status) => {
      const forge = create.length > 0 ? await this.reportForge(trigger) : undefined;
      for (const p of create) {
        const rendered = renderTaskSpec(trigger.spec.template.spec, { item: p.item, comment: p.comment });
        const item = await withItemBranch(rendered, trigger, p.item, forge?.forge);
        if ('refused' in item && forge) await this.refuse(trigger, forge, p.item.number, p.name, item.refused);
        else if ('spec' in item) await this.create(trigger, p.name, item.spec, p.labels, status);
      }
    },
  };

  private inTurn<T>(key: string, work: () => Promise<T>): Promise<T> {
    const run = (this.turns.get(key) ?? Promise.resolve()).then(work, work);
    const settled = run.catch(() => undefined);
    this.turns.set(key, settled);
    void settled.then(() => this.turns.get(key) === settled && this.turns.delete(key));
    return run;
  }

  private async forgePass(
    trigger: RunnableTrigger,
    kind: ForgeKind,
    source: ForgeSource,
    status: AgentTriggerStatus,
    now: Date,
  ): Promise<Date> {
    const forge = await this.forgeOf(trigger, kind, source);
    // Loops are prevented by the marker on episodic's own comments (judgeItem), not by excluding the token's user.
    const poll = await pollForge(forge.forge, source, status);
    // Nothing new (GitHub's 304): only items held back last time may have room now.
    const polled = poll.kind === 'listed' ? poll.polled : [];
    const looked = poll.kind === 'listed' ? poll.seen : (this.held.get(trigger.key) ?? []);
    const { commands: seen, resumes } = splitResumeComments(looked, source.command?.text);
    const waitingResumes = await this.resume(trigger, forge.forge, source, resumes);
    const permissions = await commandPermissions(forge.forge, source, seen);
    const existing = await this.existing(trigger);
    const plan = planItems({
      trigger: trigger.name,
      seen,
      existing,
      rules: source,
      permissionOf: (u) => permissions.get(u),
      ...triggerLimits(trigger.spec, status.tasksCreated, existing),
    });
    const waits = pollWaits(plan, waitingResumes);
    status.itemsUndecided = waits.undecided;
    if (waits.undecided) this.deps.logger.warn({ trigger: trigger.key, undecided: waits.undecided }, 'items wait');
    if (poll.kind === 'listed') status.itemsSkipped = addSkips(status.itemsSkipped, plan.skipped);
    for (const p of plan.create) {
      const rendered = renderTaskSpec(trigger.spec.template.spec, { item: p.item, comment: p.comment });
      const item = await withItemBranch(rendered, trigger, p.item, forge.forge);
      if ('refused' in item) await this.refuse(trigger, forge, p.item.number, p.name, item.refused);
      else await this.create(trigger, p.name, item.spec, p.labels, status);
    }
    if (waits.hold) this.held.set(trigger.key, looked);
    else this.held.delete(trigger.key);
    status.itemsSeen = (status.itemsSeen ?? 0) + polled.length;
    status.tasksActive = activeAfter(existing, plan.create.length);
    // Held and undecided items are polled again: the cursor moves only when everything seen was handled.
    if (!waits.hold) advanceCursor(status, polled);
    await this.report(trigger, forge, source, status);
    return new Date(now.getTime() + source.pollSeconds * 1000);
  }

  /** An item that gets no task: a warning, and the reason in its report comment (one, edited in place). */
  private async refuse(
    trigger: RunnableTrigger,
    forge: { forge: Forge; token: boolean },
    number: number,
    task: string,
    reason: string,
  ): Promise<void> {
    this.deps.logger.warn({ trigger: trigger.key, item: number, reason }, 'item refused: no task');
    if (!trigger.spec.report?.comment || !forge.token) return;
    await forge.forge.upsertReport(number, itemReportKey(trigger.name, number), refusalComment(task, reason));
  }

  /**
   * No poll: `run` calls it once its tasks settled, so the comments show how they ended and a schedule keeps
   * only historyLimit finished tasks (the one that just finished counts).
   */
  async reportPass(trigger: RunnableTrigger): Promise<void> {
    const schedule = trigger.spec.source.schedule;
    if (schedule) {
      const pruned = this.inTurn(trigger.key, () => this.pruneHistory(trigger, schedule));
      await pruned.catch((err: Error) =>
        this.deps.logger.warn({ trigger: trigger.key, err: err.message }, 'pruning failed'),
      );
      return;
    }
    if (!trigger.spec.report) return;
    const status = AgentTriggerStatusSchema.parse(this.deps.status.read(trigger.key) ?? {});
    try {
      await this.reportAll(trigger, status);
    } catch (err) {
      this.deps.logger.warn({ trigger: trigger.key, err: (err as Error).message }, 'reporting back failed');
    }
    await this.deps.status.write(trigger.key, status).catch((err: Error) => {
      this.deps.logger.warn({ trigger: trigger.key, err: err.message }, 'writing trigger status failed');
    });
  }

  /** The Forge spec.report writes through, whatever the source; undefined without spec.report. */
  private async reportForge(trigger: RunnableTrigger): Promise<{ forge: Forge; token: boolean } | undefined> {
    const target = trigger.spec.report ? reportTarget(trigger.spec) : undefined;
    return target && this.forgeOf(trigger, target.kind, target.source);
  }

  /** spec.report through the trigger's report target (reportTarget): a forge source's, or a webhook's. */
  private async reportAll(trigger: RunnableTrigger, status: AgentTriggerStatus): Promise<void> {
    const target = trigger.spec.report ? reportTarget(trigger.spec) : undefined;
    if (!target) return;
    await this.report(trigger, await this.forgeOf(trigger, target.kind, target.source), target.source, status);
  }

  /** spec.report for every task of the trigger; needs the token (its user writes the comments). */
  private async report(
    trigger: RunnableTrigger,
    forge: { forge: Forge; token: boolean },
    source: ReportSource,
    status: AgentTriggerStatus,
  ): Promise<void> {
    if (!trigger.spec.report) return;
    if (!forge.token) throw new Error('spec.report needs a token (tokenEnv or tokenSecretRef)');
    await reportTriggerTasks({
      forge: forge.forge,
      trigger,
      source,
      tasks: await this.deps.created.list(trigger.owner),
      status,
      taskStatus: (namespace, name) => this.deps.taskStatus?.(namespace, name),
      now: () => this.deps.clock.now(),
    });
  }

  /** The permitted resume comments carried out; returns the items whose resume waits (handleResumes). */
  private async resume(trigger: RunnableTrigger, forge: Forge, source: ForgeSource, resumes: ForgeComment[]) {
    const request = this.deps.requestResume;
    if (resumes.length === 0 || !request) return [];
    return handleResumes(resumes, {
      trigger: trigger.name,
      forge,
      source,
      tasks: await this.deps.created.list(trigger.owner),
      taskStatus: (namespace, name) => this.deps.taskStatus?.(namespace, name),
      request,
      log: (fields, message) => this.deps.logger.info({ trigger: trigger.key, ...fields }, message),
    });
  }

  /** The trigger's Forge (kept across passes), with whether it has a token. */
  private async forgeOf(
    trigger: RunnableTrigger,
    kind: ForgeKind,
    source: ReportSource,
  ): Promise<{ forge: Forge; token: boolean }> {
    const token = await this.deps.secret(source, trigger.namespace);
    if ((source.tokenEnv || source.tokenSecretRef) && !token)
      throw new Error(
        `the token is not set (${source.tokenEnv ? `environment variable ${source.tokenEnv}` : 'Secret'})`,
      );
    const metrics = this.deps.counters;
    const forge = this.forges.open(trigger.key, kind, source, token, { metrics, now: () => this.deps.clock.now() });
    return { forge, token: !!token };
  }

  private async create(
    trigger: RunnableTrigger,
    name: string,
    spec: Record<string, unknown>,
    labels: Record<string, string>,
    status: AgentTriggerStatus,
  ): Promise<void> {
    const out = await this.deps.created.create(trigger.owner, name, spec, {
      ...trigger.spec.template.labels,
      ...labels,
    });
    if (out.result === 'created') {
      status.tasksCreated = (status.tasksCreated ?? 0) + 1;
      this.deps.counters?.taskCreated(trigger.namespace, trigger.name);
      this.deps.logger.info({ trigger: trigger.key, task: name }, 'trigger created a task');
    } else if (out.result === 'taken') {
      throw new Error(`task ${out.message}`);
    }
  }
}
