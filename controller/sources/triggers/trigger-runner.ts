// One pass of a trigger — a schedule's due tick or a forge poll — turned into created tasks through the one
// CreatedTasks port (local: spec documents under the state dir; cluster: AgentTasks with an ownerReference),
// and its status. The rules are the pure ones of reconciler/trigger-*.ts; this file does the I/O around them.
// Names are deterministic, so a second pass, a restart or a lost status never creates a task twice.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { AgentTriggerSpec, AgentTriggerStatus, ForgeSource, ScheduleSource } from '../../api/agent-trigger.ts';
import { AgentTriggerStatusSchema } from '../../api/agent-trigger.ts';
import type { Clock } from '../../core/clock.ts';
import type { CreatedTasks, TaskOwner } from '../../core/created-tasks.ts';
import type { TriggerCounters } from '../../metrics/trigger-metrics.ts';
import type { Permission } from '../../api/agent-trigger.ts';
import type { ExistingTask, ItemSeen } from '../../reconciler/trigger-items.ts';
import { planItems } from '../../reconciler/trigger-items.ts';
import { decideSchedule, pastHistory, TICK_LABEL } from '../../reconciler/trigger-schedule.ts';
import { renderTaskSpec } from '../../reconciler/trigger-template.ts';
import { ForgeError, GiteaClient } from './gitea-client.ts';
import { reportTasks } from './reports.ts';
import type { TaskReport } from './reports.ts';
import { ITEM_LABEL } from '../../reconciler/trigger-items.ts';

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
  /** spec.report: a task's phase, episodes, cost and reason, as recorded. */
  taskReport?(namespace: string, name: string): TaskReport | undefined;
  logger: Logger;
}

const ERROR_MAX = 500;
/** Backoff after a failed poll doubles from pollSeconds up to this. */
const MAX_BACKOFF_MS = 15 * 60_000;
const RETRY_MS = 5_000;

export class TriggerRunner {
  private readonly deps: TriggerDeps;
  /** Consecutive failed polls per trigger: the backoff. */
  private readonly failures = new Map<string, number>();
  /** Token hash → its user: the login never changes while the controller runs. */
  private readonly selves = new Map<string, string>();

  constructor(deps: TriggerDeps) {
    this.deps = deps;
  }

  /** One pass; returns when the next one is due. Never throws: a failure is in status and backs off. */
  async pass(trigger: RunnableTrigger): Promise<Date> {
    const now = this.deps.clock.now();
    const before = AgentTriggerStatusSchema.parse(this.deps.status.read(trigger.key) ?? {});
    const status: AgentTriggerStatus = { ...before, lastPollAt: now.toISOString() };
    let next: Date;
    try {
      if (trigger.spec.suspend) next = new Date(now.getTime() + 60_000);
      else if (trigger.spec.source.schedule)
        next = await this.schedulePass(trigger, trigger.spec.source.schedule, status, now);
      else if (trigger.spec.source.gitea) next = await this.giteaPass(trigger, trigger.spec.source.gitea, status, now);
      else throw new Error('source.github and source.webhook are not served yet (schedule and gitea are)');
      this.failures.delete(trigger.key);
      status.lastError = undefined;
      status.rateLimitedUntil = undefined;
    } catch (err) {
      next = this.backoff(trigger, err, status, now);
    }
    status.nextPollAt = next.toISOString();
    await this.deps.status.write(trigger.key, status);
    return next;
  }

  private backoff(trigger: RunnableTrigger, err: unknown, status: AgentTriggerStatus, now: Date): Date {
    const n = (this.failures.get(trigger.key) ?? 0) + 1;
    this.failures.set(trigger.key, n);
    // A forge failing waits a poll interval; anything else (the apiserver busy, a file) is retried sooner.
    const base = err instanceof ForgeError ? (trigger.spec.source.gitea?.pollSeconds ?? 60) * 1000 : RETRY_MS;
    const retry = err instanceof ForgeError ? err.retryAt : undefined;
    status.rateLimitedUntil = retry?.toISOString();
    status.lastError = (err as Error).message.slice(0, ERROR_MAX);
    this.deps.logger.warn({ trigger: trigger.key, err: status.lastError, failures: n }, 'trigger pass failed');
    const backoffAt = new Date(now.getTime() + Math.min(base * 2 ** (n - 1), MAX_BACKOFF_MS));
    return retry && retry > backoffAt ? retry : backoffAt;
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
      maxConcurrency: trigger.spec.maxConcurrency,
      maxTotal: trigger.spec.maxTotal,
      createdTotal: Math.max(status.tasksCreated, existing.length),
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
    const after = await this.existing(trigger);
    status.tasksActive = after.filter((t) => !t.finished).length;
    for (const name of pastHistory(after, schedule.historyLimit)) {
      await this.deps.created.delete(trigger.owner, name);
      this.deps.logger.info({ trigger: trigger.key, task: name }, 'deleted a finished task past historyLimit');
    }
    return decision.next ?? new Date(now.getTime() + 3_600_000);
  }

  private async giteaPass(
    trigger: RunnableTrigger,
    source: ForgeSource,
    status: AgentTriggerStatus,
    now: Date,
  ): Promise<Date> {
    const token = await this.deps.secret(source, trigger.namespace);
    if ((source.tokenEnv || source.tokenSecretRef) && !token)
      throw new Error(
        `the token is not set (${source.tokenEnv ? `environment variable ${source.tokenEnv}` : 'Secret'})`,
      );
    const client = new GiteaClient({ apiURL: source.apiURL, token, counters: this.deps.counters, now: () => now });
    const self = await this.selfOf(client, source.apiURL, token);
    const rules = { ...source, excludeAuthors: self ? [...source.excludeAuthors, self] : source.excludeAuthors };
    // since= is inclusive to the second: what was handled at exactly the cursor comes back and is dropped.
    const atCursor = new Set(status.cursorItems ?? []);
    const polled = (await client.openItems(source.repo, source.kind, status.cursor)).filter(
      (p) => !(p.updatedAt === status.cursor && atCursor.has(p.fingerprint)),
    );
    const seen: ItemSeen[] = [];
    for (const p of polled) {
      const comments = source.command ? await client.comments(source.repo, p.item.number, status.cursor) : [];
      seen.push({ item: p.item, comments });
    }
    const permissions = await this.permissions(client, source, seen);
    const existing = await this.existing(trigger);
    const plan = planItems({
      trigger: trigger.name,
      seen,
      existing,
      rules,
      permissionOf: (u) => permissions.get(u),
      maxConcurrency: trigger.spec.maxConcurrency,
      maxTotal: trigger.spec.maxTotal,
      createdTotal: Math.max(status.tasksCreated, existing.length),
    });
    for (const p of plan.create) {
      const spec = renderTaskSpec(trigger.spec.template.spec, { item: p.item, comment: p.comment });
      await this.create(trigger, p.name, spec, p.labels, status);
    }
    if (trigger.spec.report?.comment) await this.report(trigger, source, client, self, status);
    status.itemsSeen = (status.itemsSeen ?? 0) + polled.length;
    status.tasksActive = existing.filter((t) => !t.finished).length + plan.create.length;
    // Held items are polled again: the cursor moves only when everything seen was handled.
    const newest = polled.at(-1)?.updatedAt;
    if (plan.held === 0 && newest) {
      const sameSecond = polled.filter((p) => p.updatedAt === newest).map((p) => p.fingerprint);
      status.cursorItems = (newest === status.cursor ? [...atCursor, ...sameSecond] : sameSecond).slice(-200);
      status.cursor = newest;
    }
    return new Date(now.getTime() + source.pollSeconds * 1000);
  }

  /** Reports only (no poll): `run` calls it once its tasks settled, so the comments show how they ended. */
  async reportPass(trigger: RunnableTrigger): Promise<void> {
    const source = trigger.spec.source.gitea;
    if (!source || !trigger.spec.report?.comment) return;
    const status = AgentTriggerStatusSchema.parse(this.deps.status.read(trigger.key) ?? {});
    try {
      const token = await this.deps.secret(source, trigger.namespace);
      const client = new GiteaClient({ apiURL: source.apiURL, token, counters: this.deps.counters });
      await this.report(trigger, source, client, await this.selfOf(client, source.apiURL, token), status);
      await this.deps.status.write(trigger.key, status);
    } catch (err) {
      this.deps.logger.warn({ trigger: trigger.key, err: (err as Error).message }, 'reporting back failed');
    }
  }

  private async report(
    trigger: RunnableTrigger,
    source: ForgeSource,
    client: GiteaClient,
    self: string | undefined,
    status: AgentTriggerStatus,
  ): Promise<void> {
    const tasks = (await this.deps.created.list(trigger.owner)).flatMap((t) => {
      const item = Number(t.labels[ITEM_LABEL]);
      return item > 0 ? [{ name: t.name, item, report: this.deps.taskReport?.(t.namespace, t.name) }] : [];
    });
    await reportTasks({ client, repo: source.repo, trigger: trigger.name, self, tasks, status });
  }

  /** The token's user, asked once per token while the controller runs. */
  private async selfOf(client: GiteaClient, apiURL: string, token: string | undefined): Promise<string | undefined> {
    if (!token) return undefined;
    const key = `${apiURL} ${createHash('sha256').update(token).digest('hex')}`;
    let self = this.selves.get(key);
    if (self === undefined) {
      self = await client.self();
      if (self) this.selves.set(key, self);
    }
    return self;
  }

  /** Permissions of the authors of command comments only: one request per author per poll. */
  private async permissions(
    client: GiteaClient,
    source: ForgeSource,
    seen: ItemSeen[],
  ): Promise<Map<string, Permission | undefined>> {
    const out = new Map<string, Permission | undefined>();
    const text = source.command?.text;
    if (!text) return out;
    for (const s of seen)
      for (const c of s.comments)
        if (c.body.trimStart().startsWith(text) && !out.has(c.author))
          out.set(c.author, await client.permission(source.repo, c.author));
    return out;
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
