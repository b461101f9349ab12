// The trigger loop of both modes, in the shape of core/controller.ts: each pass gathers the facts (the
// trigger's status and tasks, what the forge or a webhook shows), asks the pure reconcileTrigger
// (reconciler/trigger-reconcile.ts) what to do, gathers what it asks for, performs the actions in order and
// writes the status. Every rule — which items become tasks, which are held, the cursor, the backoff, the next
// pass — is the reconciler's. Tasks are created through the one CreatedTasks port (local: spec documents
// under the state dir; cluster: AgentTasks with an ownerReference); their names are deterministic, so a
// second pass, a restart or a lost status never creates a task twice.
import type { Logger } from 'pino';
import type { AgentTaskStatus } from '../../api/agent-task-status.ts';
import type { AgentTriggerSpec, AgentTriggerStatus } from '../../api/agent-trigger.ts';
import { AgentTriggerStatusSchema } from '../../api/agent-trigger.ts';
import type { ForgeKind, PermissionAnswer } from '../../api/forge-item.ts';
import type { Clock } from '../../core/clock.ts';
import type { CreatedTasks, TaskOwner } from '../../core/created-tasks.ts';
import { type Forge, readPermission } from '../../forge/types.ts';
import type { TriggerCounters } from '../../metrics/trigger-metrics.ts';
import type { ItemSeen } from '../../reconciler/trigger-items.ts';
import type {
  ActionOutcome,
  TriggerAction,
  TriggerDecision,
  TriggerFacts,
  TriggerLookup,
  TriggerPass,
} from '../../reconciler/trigger-reconcile.ts';
import { MAX_LOOKUP_ROUNDS, reconcileTrigger, recordOutcome } from '../../reconciler/trigger-reconcile.ts';
import type { ResumeRequest } from '../../reconciler/trigger-resume.ts';
import { afterStatusWriteFailed } from '../../reconciler/trigger-timing.ts';
import { failureOf, pollForge, TriggerForges } from './forge-poll.ts';
import { performTaskReport } from './report-task.ts';
import { type ReportSource, reportTarget } from './trigger-reports.ts';

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
  /** In [0, 1]: the backoff's jitter (Math.random unless a test fixes it). */
  random?: () => number;
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

/** The facts of one pass as the runner fills them in, with the forge client the lookups go through. */
interface Gathered {
  facts: TriggerFacts & {
    permissions: Map<string, PermissionAnswer>;
    pullRequests: Map<number, Awaited<ReturnType<Forge['getPullRequest']>>>;
    items: Map<number, Awaited<ReturnType<Forge['getItem']>>>;
  };
  forge?: Forge;
}

export class TriggerRunner {
  private readonly deps: TriggerDeps;
  /** Consecutive failed passes per trigger: the backoff's attempt. */
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
    return this.inTurn(trigger.key, async () => {
      const { status, next, now } = await this.run(trigger, 'timer', {});
      const due = next ?? now;
      try {
        if (status) await this.deps.status.write(trigger.key, status);
      } catch (err) {
        // Passes run on timers: a refused status write (apiserver busy, an older CRD) must not escape them.
        this.warnWrite(trigger, err);
        return afterStatusWriteFailed(due, now);
      }
      return due;
    });
  }

  /**
   * Items a webhook delivered, judged like a poll result (the same rules, the same names, so a delivery, a
   * poll and a restart agree on one task per item); `permissions`: the commenter's, as the hook looked it up.
   * Throws when a task cannot be written: the delivery then fails and the forge may redeliver it.
   */
  itemsArrived(
    trigger: RunnableTrigger,
    seen: ItemSeen[],
    permissions: ReadonlyMap<string, PermissionAnswer>,
  ): Promise<void> {
    return this.inTurn(trigger.key, async () => {
      const { status } = await this.run(trigger, 'delivery', { delivered: seen, permissions: new Map(permissions) });
      if (status) await this.deps.status.write(trigger.key, status);
    });
  }

  /** Reports only (no poll): `run` calls it once its tasks settled, so the comments show how they ended. */
  reportPass(trigger: RunnableTrigger): Promise<void> {
    return this.inTurn(trigger.key, async () => {
      const { status } = await this.run(trigger, 'report', {});
      if (status) await this.deps.status.write(trigger.key, status).catch((err) => this.warnWrite(trigger, err));
    });
  }

  /** Gathers, decides (gathering what the decision asks for), performs; a failure is decided on too. */
  private async run(
    trigger: RunnableTrigger,
    pass: TriggerPass,
    given: Partial<Gathered['facts']>,
  ): Promise<{ status?: AgentTriggerStatus; next?: Date; now: Date }> {
    const now = this.deps.clock.now();
    const g: Gathered = {
      facts: {
        trigger,
        pass,
        status: AgentTriggerStatusSchema.parse(this.deps.status.read(trigger.key) ?? {}),
        now,
        jitter: (this.deps.random ?? Math.random)(),
        failures: this.failures.get(trigger.key) ?? 0,
        tasks: [],
        canResume: this.deps.requestResume !== undefined,
        permissions: new Map(),
        pullRequests: new Map(),
        items: new Map(),
        ...given,
      },
    };
    const done: { status?: AgentTriggerStatus } = {};
    try {
      await this.gather(trigger, g);
      const decision = await this.decide(trigger, g);
      done.status = decision.status;
      await this.performAll(trigger, g, decision, done);
      if (decision.reportsNext && done.status) {
        // The reports stage: the tasks as they are now, the ones just created included.
        g.facts = { ...g.facts, status: done.status, stage: 'reports', tasks: await this.tasks(trigger) };
        await this.performAll(trigger, g, await this.decide(trigger, g), done);
      }
      this.countFailures(trigger, pass, decision);
      return { status: done.status, next: decision.nextPassAt, now };
    } catch (err) {
      // A delivery fails as it is (the hook answers 500 and the forge redelivers); passes back off.
      if (pass === 'delivery') throw err;
      const failed = reconcileTrigger({ ...g.facts, status: done.status ?? g.facts.status, failure: failureOf(err) });
      for (const action of failed.actions) await this.perform(trigger, g, action);
      this.countFailures(trigger, pass, failed);
      return { status: failed.status, next: failed.nextPassAt, now };
    }
  }

  /** The decision's actions in order, each one's outcome folded into the status as it is done. */
  private async performAll(
    trigger: RunnableTrigger,
    g: Gathered,
    decision: TriggerDecision,
    done: { status?: AgentTriggerStatus },
  ): Promise<void> {
    for (const action of decision.actions) {
      const outcome = await this.perform(trigger, g, action);
      if (done.status) done.status = recordOutcome(done.status, action, outcome);
    }
  }

  /** reconcileTrigger, again after each round of the lookups it asks for. */
  private async decide(trigger: RunnableTrigger, g: Gathered): Promise<TriggerDecision> {
    let decision = reconcileTrigger(g.facts);
    for (let round = 1; decision.lookups.length > 0; round++) {
      if (round > MAX_LOOKUP_ROUNDS) throw new Error('the trigger pass kept asking for facts');
      for (const lookup of decision.lookups) await this.lookUp(trigger, g, lookup);
      decision = reconcileTrigger(g.facts);
    }
    return decision;
  }

  private countFailures(trigger: RunnableTrigger, pass: TriggerPass, decision: TriggerDecision): void {
    if (pass !== 'timer') return;
    if (decision.failures > 0) this.failures.set(trigger.key, decision.failures);
    else this.failures.delete(trigger.key);
  }

  /** The facts every pass starts from: a forge source's poll (one request when nothing changed), then the tasks. */
  private async gather(trigger: RunnableTrigger, g: Gathered): Promise<void> {
    const { spec } = trigger;
    const source = spec.source.gitea ?? spec.source.github;
    if (g.facts.pass === 'timer' && source && !spec.suspend) {
      const forge = await this.openForge(trigger, g, spec.source.gitea ? 'gitea' : 'github', source);
      g.facts.poll = await pollForge(forge, source, g.facts.status);
      g.facts.heldSeen = this.held.get(trigger.key) ?? [];
    }
    g.facts.tasks = await this.tasks(trigger);
  }

  private async lookUp(trigger: RunnableTrigger, g: Gathered, lookup: TriggerLookup): Promise<void> {
    if (lookup.kind === 'forge') {
      // spec.report through the trigger's report target: a forge source's, or a webhook's.
      const target = reportTarget(trigger.spec);
      if (!target) throw new Error('the trigger has no forge to report to');
      await this.openForge(trigger, g, target.kind, target.source);
      return;
    }
    const forge = g.forge;
    if (!forge) throw new Error(`a ${lookup.kind} lookup needs the forge`);
    // A lookup the token may not make (Gitea: another user's role needs a repo admin) is an answer, not a throw.
    if (lookup.kind === 'permission') g.facts.permissions.set(lookup.user, await readPermission(forge, lookup.user));
    else if (lookup.kind === 'pullRequest')
      g.facts.pullRequests.set(lookup.number, await forge.getPullRequest(lookup.number));
    else {
      const item = lookup.pullRequest ? await forge.getPullRequest(lookup.number) : await forge.getItem(lookup.number);
      g.facts.items.set(lookup.number, item);
    }
  }

  private async perform(trigger: RunnableTrigger, g: Gathered, action: TriggerAction): Promise<ActionOutcome> {
    const { created, logger } = this.deps;
    switch (action.kind) {
      case 'log':
        logger[action.level]({ trigger: trigger.key, ...action.fields }, action.message);
        break;
      case 'resume':
        await this.deps.requestResume?.(action.namespace, action.name, action.request);
        break;
      case 'delete':
        await created.delete(trigger.owner, action.name);
        break;
      case 'create':
        return this.create(trigger, action);
      case 'refuse':
        await this.forgeFor(g, action.kind).upsertReport(action.number, action.key, action.body);
        break;
      case 'record':
        if (action.poll?.held.length) this.held.set(trigger.key, action.poll.held);
        else if (action.poll) this.held.delete(trigger.key);
        break;
      case 'report': {
        const done = await performTaskReport(this.forgeFor(g, action.kind), action.report);
        const pr = done.find((d) => d.kind === 'publish' && d.pullRequest);
        const pullRequest = pr?.kind === 'publish' && pr.pullRequest;
        return {
          kind: 'reported',
          ...(pullRequest ? { pullRequest: { number: pullRequest.number, url: pullRequest.url } } : {}),
        };
      }
      case 'fail':
        throw new Error(action.message);
    }
    return { kind: 'done' };
  }

  private async create(
    trigger: RunnableTrigger,
    action: Extract<TriggerAction, { kind: 'create' }>,
  ): Promise<ActionOutcome> {
    const out = await this.deps.created.create(trigger.owner, action.name, action.spec, action.labels);
    if (out.result === 'taken') throw new Error(`task ${out.message}`);
    if (out.result !== 'created') return { kind: 'exists' };
    this.deps.counters?.taskCreated(trigger.namespace, trigger.name);
    this.deps.logger.info({ trigger: trigger.key, task: action.name }, 'trigger created a task');
    return { kind: 'created' };
  }

  /** The trigger's tasks as facts: whether each finished, and its status as recorded. */
  private async tasks(trigger: RunnableTrigger): Promise<TriggerFacts['tasks']> {
    const tasks = await this.deps.created.list(trigger.owner);
    return tasks.map((t) => ({
      namespace: t.namespace,
      name: t.name,
      labels: t.labels,
      finished: this.deps.finished(t.namespace, t.name),
      status: this.deps.taskStatus?.(t.namespace, t.name),
    }));
  }

  /** The trigger's Forge (kept across passes) for this pass, and whether it has a token. */
  private async openForge(
    trigger: RunnableTrigger,
    g: Gathered,
    kind: ForgeKind,
    source: ReportSource,
  ): Promise<Forge> {
    const token = await this.deps.secret(source, trigger.namespace);
    if ((source.tokenEnv || source.tokenSecretRef) && !token)
      throw new Error(
        `the token is not set (${source.tokenEnv ? `environment variable ${source.tokenEnv}` : 'Secret'})`,
      );
    const opts = { metrics: this.deps.counters, now: () => this.deps.clock.now() };
    g.forge = this.forges.open(trigger.key, kind, source, token, opts);
    g.facts.forge = { token: !!token };
    return g.forge;
  }

  private forgeFor(g: Gathered, action: string): Forge {
    if (!g.forge) throw new Error(`a ${action} action needs the forge`);
    return g.forge;
  }

  private warnWrite(trigger: RunnableTrigger, err: unknown): void {
    this.deps.logger.warn({ trigger: trigger.key, err: (err as Error).message }, 'writing trigger status failed');
  }

  private inTurn<T>(key: string, work: () => Promise<T>): Promise<T> {
    const run = (this.turns.get(key) ?? Promise.resolve()).then(work, work);
    const settled = run.catch(() => undefined);
    this.turns.set(key, settled);
    void settled.then(() => this.turns.get(key) === settled && this.turns.delete(key));
    return run;
  }
}
