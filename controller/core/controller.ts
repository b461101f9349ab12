// The one controller loop of both modes: a keyed work queue over the three ports. Each pass gathers the
// facts (desired task, recorded status, observed episode, dependencies, slots, spend), asks the pure
// reconcile() what to do, and does it in crash-safe order: status on record first, then the actions in the
// order reconcile() lists them. Every rule about a task is reconcile()'s; the loop keeps the queue and slots.
// Like controller-runtime, the loop owns requeue (requeueAfter), retry with backoff, and forget.
import type { Logger } from 'pino';
import { emptyStatus, taskKey } from '../api/agent-task.ts';
import type { AgentTaskStatus, Phase } from '../api/agent-task.ts';
import type { AdoptOutcome } from '../api/attempts.ts';
import type { ApplyRejection } from '../api/ops.ts';
import { statusProblems } from '../api/validate.ts';
import { clip, EVENT_MESSAGE_MAX } from '../api/bounds.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import { cycleThrough, dependencyFact } from '../reconciler/dependencies.ts';
import type { DependencyFact } from '../reconciler/dependencies.ts';
import type { CredentialsPaused } from '../reconciler/credentials-hold.ts';
import { reconcile } from '../reconciler/reconcile.ts';
import type { Action, ObservedEpisode, ReconcileInput, ReconcileResult, StopReason } from '../reconciler/reconcile.ts';
import { mailboxCameUp } from '../reconciler/mail.ts';
import { settled } from '../reconciler/settled.ts';
import { freeSlots } from '../reconciler/slots.ts';
import { diffsWanted } from '../reconciler/attempts.ts';
import type { SpawnFacts } from '../reconciler/spawn-decide.ts';
import { BudgetBook } from './budget-book.ts';
import type { BudgetStore } from './budget-book.ts';
import { systemClock } from './clock.ts';
import type { Clock } from './clock.ts';
import type { MailboxEvents } from './mailboxes.ts';
import { StoreFullError, TerminalError } from './ports.ts';
import type { DesiredTask, EpisodeExecutor, OpsApplier, StatusSink, TaskSource, UpstreamOutputs } from './ports.ts';
import { applyOpsThenRecord, countEpisodeOps, opsFollow } from './ops-loop.ts';
import { WorkQueue } from './work-queue.ts';
import type { SpawnLoop } from './spawn-loop.ts';

export interface ControllerOptions<T extends DesiredTask> {
  source: TaskSource<T>;
  executor: EpisodeExecutor<T>;
  sink: StatusSink<T>;
  logger: Logger;
  /** --max-concurrent: episodes running at once across all tasks. */
  maxConcurrent: number;
  /** --budget-usd: no episode starts once all tasks together spent this much. */
  budgetUSD?: number;
  /** AgentBudgets: checked before every episode, their ledgers kept by this loop. */
  budgets?: BudgetStore;
  /** Reconciles of different tasks in flight at once. */
  workers?: number;
  metrics?: EpisodicMetrics;
  clock?: Clock;
  /** In [0, 1): backoff jitter. */
  random?: () => number;
  /** spec.agent.credentials: whether every credential of the task's pool is paused (a usage limit), until when. */
  credentialsPaused?: (task: T) => CredentialsPaused | undefined | Promise<CredentialsPaused | undefined>;
  /** A pool's pauses changed (namespace, AgentCredentials name): its tasks are looked at again, all at once. */
  credentialEvents?: { subscribe(fn: (namespace: string, name: string) => void): void };
  /**
   * Tasks on record that their source no longer has (deleting), e.g. a spec deleted while no controller
   * ran: reconciled once at start() like any deleted task, so their episodes are recorded before release.
   */
  deletedTasks?: readonly T[];
  /** Agent ops with effects outside the status (blackboard, spawn, send). */
  ops?: OpsApplier<T>;
  /** spawn/send: children, mailboxes and their placeholders (core/spawn-loop.ts). */
  spawn?: SpawnLoop<T>;
  /** Mailbox arrivals: the task is reconciled at once (wake: onMessage, interrupt) instead of at its resync. */
  mailboxEvents?: MailboxEvents;
}

export class Controller<T extends DesiredTask = DesiredTask> {
  private readonly opts: ControllerOptions<T>;
  private readonly queue: WorkQueue;
  private readonly clock: Clock;
  /** The last desired state seen per key: a task deleted while its episode runs still needs its end recorded. */
  private readonly known = new Map<string, T>();
  /** Task key → keys of the tasks that dependOn it. */
  private readonly dependents = new Map<string, Set<string>>();
  private readonly stops = new Map<string, { number: number; reason: StopReason }>();
  /** Episodes on record whose start failed with an error worth retrying: started again, never renumbered. */
  private readonly pendingStarts = new Map<string, number>();
  /** Tasks whose last pass found no free slot, longest waiting first. */
  private readonly slotWaiters = new Set<string>();
  private readonly spent = new Map<string, number>();
  private totalSpent = 0;
  private readonly phases = new Map<string, Phase>();
  /** Task key → the newest episode whose ops this controller applied (ReconcileInput.opsApplied). */
  private readonly opsApplied = new Map<string, { episode: number; refused: ApplyRejection[] }>();
  /** Best-of-N: the outcome of each task's last AdoptWinner (lost on a restart, which carries it out again). */
  private readonly adopted = new Map<string, AdoptOutcome>();
  private reserved = 0;
  /** Slots lent to agents run outside a task's pass (the merge queue's resolution episodes). */
  private lent = 0;
  private stopping = false;
  private listeners: Array<() => void> = [];
  private readonly budgetBook: BudgetBook | undefined;

  constructor(opts: ControllerOptions<T>) {
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.queue = new WorkQueue((key) => this.reconcileKey(key), {
      concurrency: opts.workers ?? 4,
      clock: this.clock,
      onError: (key, err) => {
        opts.metrics?.reconcileErrors.inc();
        if (err instanceof StoreFullError) return; // said once by the sink; retried with backoff until there is room
        opts.logger.error({ ...keyFields(key), err }, 'reconcile failed; will retry');
      },
    });
    if (opts.budgets) {
      const changed = (ns: string) => {
        for (const t of this.opts.source.list()) if (t.namespace === ns) this.queue.add(t.key);
      };
      this.budgetBook = new BudgetBook({
        store: opts.budgets,
        clock: this.clock,
        log: opts.logger,
        metrics: opts.metrics?.budgets,
        changed,
      });
    }
    opts.source.subscribe((key) => this.sourceChanged(key));
    opts.executor.subscribe((key) => {
      // An episode's end is recorded before more episodes start: with many waiting tasks it would
      // otherwise queue behind all of them, and status would lag far behind what happened.
      this.queue.addFirst(key);
      this.wakeSlotWaiters();
    });
    opts.credentialEvents?.subscribe((ns, name) => {
      for (const t of opts.source.list())
        if (t.namespace === ns && t.spec?.agent.credentials === name) this.queue.add(t.key);
    });
    // A message for a task the source does not have (yet) waits in its mailbox for the task's first pass.
    opts.mailboxEvents?.subscribe((key) => opts.source.get(key) && this.queue.add(key));
  }

  /** Indexes what the ports know and reconciles every task once. */
  start(): void {
    for (const task of this.opts.source.list()) {
      this.index(task);
      this.queue.add(task.key);
    }
    for (const task of this.opts.deletedTasks ?? []) {
      if (this.opts.source.get(task.key)) continue; // back in the source: it is no longer deleted
      this.index(task);
      this.queue.add(task.key);
    }
    for (const key of this.opts.executor.keys()) this.queue.add(key);
  }

  /** Stops starting episodes, stops the running ones and waits until their ends are recorded. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    for (const key of [...this.opts.executor.keys(), ...this.slotWaiters]) this.queue.add(key);
    while (this.opts.executor.runningCount() > 0 || this.queue.length > 0 || this.busy()) await this.nextChange();
    await this.queue.idle();
    this.queue.stop();
  }

  /** Stops the loop at once (leadership lost): nothing more is written or started. */
  halt(): void {
    this.stopping = true;
    this.queue.stop();
  }

  /** Nothing queued or being reconciled (timers for later work aside). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** For `episodic run`: every task terminal or stuck on something only an edit can change, nothing running. */
  settled(): boolean {
    const { source, sink } = this.opts;
    const tasks = function* () {
      for (const task of source.list()) {
        const dependencyMissing = task.dependsOn.some((d) => !source.get(taskKey(task.namespace, d)));
        yield { status: sink.read(task), dependencyMissing };
      }
    };
    return settled({ busy: this.busy(), runningEpisodes: this.opts.executor.runningCount(), tasks: tasks() });
  }

  /**
   * A slot of --max-concurrent for an agent run outside a task's pass (a merge queue's resolution episode):
   * waits until one is free (reconciler/slots.ts) and holds it until the returned release is called.
   * Throws when the controller stops: the caller's step is redone after a restart.
   */
  async takeSlot(): Promise<() => void> {
    while (this.freeSlots() <= 0) {
      if (this.stopping) throw new Error('the controller is stopping: no slot for a resolution episode');
      await this.nextChange();
    }
    this.lent++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.lent--;
      this.wakeSlotWaiters();
    };
  }

  private freeSlots(): number {
    return freeSlots({
      maxConcurrent: this.opts.maxConcurrent,
      episodes: this.opts.executor.runningCount(),
      reserved: this.reserved,
      resolutions: this.lent,
      stopping: this.stopping,
    });
  }

  /** Resolves after the next reconcile pass (or within a second). */
  nextChange(): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimer(resolve, 1000);
      this.listeners.push(() => {
        timer.cancel();
        resolve();
      });
    });
  }

  private busy(): boolean {
    return this.queue.length > 0 || this.reserved > 0 || this.inFlight > 0;
  }

  private inFlight = 0;

  private async reconcileKey(key: string): Promise<void> {
    this.inFlight++;
    try {
      await this.reconcileTask(key);
      this.queue.forget(key);
    } catch (err) {
      if (err instanceof TerminalError) {
        this.opts.metrics?.reconcileErrors.inc();
        this.opts.logger.error({ ...keyFields(key), err }, 'reconcile failed; not retrying');
        this.queue.forget(key);
        return;
      }
      throw err;
    } finally {
      this.inFlight--;
      this.notify();
    }
  }

  private async reconcileTask(key: string): Promise<void> {
    const { source, executor, sink } = this.opts;
    const current = source.get(key);
    const task = current ?? this.known.get(key);
    if (!task) return executor.forget(key);
    const deleted = !current || task.deleting;
    const now = this.clock.now();
    const before = sink.read(task) ?? emptyStatus();
    const episode = executor.observe(task, before, now);
    if (deleted && !before.currentEpisode && episode?.state !== 'running') return this.release(task, !current);

    const credentialsPaused = deleted ? undefined : await this.opts.credentialsPaused?.(task);
    const pass = { deleted, before, episode, now, credentialsPaused };
    let spawn = deleted ? undefined : await this.opts.spawn?.facts(task, before);
    const attemptDiffs = await this.attemptDiffs(task, before, spawn);
    let out = reconcile({ ...this.facts(task, pass), spawn, attemptDiffs });
    // The episode this pass starts may render a prompt that came up in it (the next step's, a pushed frame):
    // when that one reads the mailbox and the one before did not, the pass is decided again with it
    // (its facts gathered again after the await: the free slots may have changed).
    if (spawn && out.actions.some((a) => a.type === 'StartEpisode') && mailboxCameUp(task.spec, before, out.status)) {
      spawn = await this.opts.spawn?.facts(task, out.status);
      out = reconcile({ ...this.facts(task, pass), spawn, attemptDiffs });
    }
    if (out.actions.some((a) => a.type === 'RecordEpisode')) countEpisodeOps(this.opts.metrics, task, episode);
    this.budgetBook?.afterPass(task, before, out.status, out.heldByBudgets, now);
    this.opts.spawn?.afterPass(task, out.status);
    const starts = out.actions.some((a) => a.type === 'StartEpisode');
    // Before the first await: parallel passes must see the slot taken and the spend counted.
    if (starts) this.reserved++;
    this.noteDecided(task, before, out.status);
    try {
      if (!deleted) await source.hold(task); // in charge before anything of the task exists
      checkStatus(key, out.status);
      await sink.write(task, out.status, { beforeStart: starts });
      await this.budgetBook?.flush();
      const promptVars = spawn && this.opts.spawn?.promptVars(spawn, out.status);
      await this.perform(promptVars ? { ...task, promptVars } : task, out.status, out.actions);
      await this.opts.spawn?.afterWrite(task, before, out.status, spawn, (k) => this.queue.add(k));
    } finally {
      if (starts) this.reserved--;
    }
    this.schedule(key, out, starts);
    if (deleted && !out.status.currentEpisode) return this.release(task, !current);
    await executor.tidy(task, out.status);
  }

  /** Best-of-N: the candidates' diffs, read only in the pass that makes the judge (diffsWanted). */
  private async attemptDiffs(
    task: T,
    status: AgentTaskStatus,
    spawn: SpawnFacts | undefined,
  ): Promise<Record<number, string> | undefined> {
    const { executor } = this.opts;
    const wanted =
      spawn && task.spec && executor.attemptDiffs ? diffsWanted(task.name, task.spec, status, spawn.children) : [];
    return wanted.length > 0 ? executor.attemptDiffs?.(task, wanted) : undefined;
  }

  /** Everything reconcile() needs to know about the task, gathered from the ports and this loop. */
  private facts(
    task: T,
    pass: {
      deleted: boolean;
      before: AgentTaskStatus;
      episode: ObservedEpisode | undefined;
      now: Date;
      credentialsPaused?: CredentialsPaused;
    },
  ): ReconcileInput {
    const { key } = task;
    const spentByOthers = this.totalSpent - (this.spent.get(key) ?? 0);
    return {
      namespace: task.namespace,
      name: task.name,
      labels: task.labels,
      generation: task.generation,
      spec: task.spec,
      specError: task.specError,
      deleted: pass.deleted,
      shuttingDown: this.stopping,
      status: pass.before,
      episode: pass.episode,
      stopRequested: this.stops.get(key),
      startToRetry: this.pendingStarts.get(key),
      resumeRequest: task.resumeRequest,
      hold: task.hold,
      opsApplied: this.opsApplied.get(key)?.episode,
      opsRefused: this.opsApplied.get(key)?.refused,
      ...this.dependencies(task),
      capacity: this.freeSlots() > 0,
      globalBudget:
        this.opts.budgetUSD !== undefined
          ? { limitUSD: this.opts.budgetUSD, othersSpentUSD: spentByOthers }
          : undefined,
      budgets: pass.deleted ? undefined : this.budgetBook?.facts(task, pass.before, pass.now),
      adoption: { supported: this.opts.executor.adoptWinner !== undefined, outcome: this.adopted.get(key) },
      credentialsPaused: pass.credentialsPaused,
      now: pass.now,
      jitter: (this.opts.random ?? Math.random)(),
    };
  }

  /** The pass's actions, in the order reconcile() listed them; the status that calls for them is written. */
  private async perform(task: T, status: AgentTaskStatus, actions: readonly Action[]): Promise<void> {
    const { executor, sink } = this.opts;
    let startDetails: Record<string, unknown> = {};
    // An episode whose ops this pass applies is recorded after them, with those refused (ops-loop.ts).
    const held = actions.find((a) => a.type === 'RecordEpisode' && opsFollow(actions, a.record.number));
    for (const a of actions) {
      if (a.type === 'RecordEpisode') {
        if (a !== held) await sink.recordEpisode(task, a.record);
      } else if (a.type === 'ApplyOps') {
        const record = held?.type === 'RecordEpisode' ? held.record : undefined;
        const refused = await applyOpsThenRecord({ ...this.opts, applier: this.opts.ops }, task, a, record);
        this.opsApplied.set(task.key, { episode: a.episode, refused });
      } else if (a.type === 'RecordEvent') {
        const details = a.afterStart ? { ...a.details, ...startDetails } : (a.details ?? {});
        sink.event(task, a.eventType, a.reason, a.message, details);
      } else if (a.type === 'CreateTasks') {
        await this.createTasks(task, a.tasks);
      } else if (a.type === 'AdoptWinner') {
        if (executor.adoptWinner) this.adopted.set(task.key, await executor.adoptWinner(task, a));
      } else if (a.type === 'StopEpisode') {
        this.stops.set(task.key, { number: a.number, reason: a.reason });
        await executor.stop(task, a.number, a.reason);
      } else {
        this.pendingStarts.set(task.key, a.number);
        startDetails = await executor.start(task, a.number, status, this.upstreamOutputs(task), a.leash);
        this.pendingStarts.delete(task.key);
      }
    }
  }

  /** A forEach step's children, through the one created-tasks mechanism; a name another task has is said. */
  private async createTasks(task: T, tasks: Extract<Action, { type: 'CreateTasks' }>['tasks']): Promise<void> {
    const refused = (await this.opts.spawn?.createTasks(task, tasks)) ?? tasks.map((t) => `${t.name}: not supported`);
    if (refused.length > 0)
      this.opts.sink.event(task, 'Warning', 'ChildrenRefused', clip(refused.join('; '), EVENT_MESSAGE_MAX), {});
  }

  /** What the pass means for the queue: a requeue, the slot waiters, the dependents. */
  private schedule(key: string, out: ReconcileResult, started: boolean): void {
    if (!out.status.currentEpisode) this.stops.delete(key);
    if (out.waitsForSlot) this.slotWaiters.add(key);
    else this.slotWaiters.delete(key);
    if (out.requeueAfterMs !== undefined) this.queue.addAfter(key, out.requeueAfterMs);
    if (out.wakeDependents) this.wakeDependents(key);
    if (!started) this.wakeSlotWaiters(); // a slot this pass left unused goes to the next waiting task
  }

  /** A deleted task with nothing running: clean up after it and let it go. */
  private async release(task: T, gone: boolean): Promise<void> {
    await this.opts.executor.forget(task.key);
    await this.opts.sink.forget(task);
    await this.opts.source.release(task);
    if (!gone) return;
    this.known.delete(task.key);
    this.budgetBook?.forgetTask(task);
    this.stops.delete(task.key);
    this.pendingStarts.delete(task.key);
    this.opsApplied.delete(task.key);
    this.adopted.delete(task.key);
    this.slotWaiters.delete(task.key);
    this.totalSpent -= this.spent.get(task.key) ?? 0;
    this.spent.delete(task.key);
    this.opts.metrics?.movePhase(task.namespace, this.phases.get(task.key), undefined);
    this.phases.delete(task.key);
    this.opts.metrics?.leash.trackWaiting(task.key, task.namespace, undefined);
    this.opts.metrics?.resume.trackReview(task.key, task.namespace, undefined);
  }

  private noteDecided(task: T, before: AgentTaskStatus, status: AgentTaskStatus): void {
    this.totalSpent += status.costUSD - (this.spent.get(task.key) ?? 0);
    this.spent.set(task.key, status.costUSD);
    const metrics = this.opts.metrics;
    if (!metrics) return;
    metrics.observeTransition(task.namespace, before, status);
    metrics.leash.trackWaiting(task.key, task.namespace, status);
    metrics.resume.trackReview(task.key, task.namespace, status);
    const phase = status.phase ?? 'Pending';
    if (this.phases.get(task.key) !== phase) metrics.movePhase(task.namespace, this.phases.get(task.key), phase);
    this.phases.set(task.key, phase);
  }

  private sourceChanged(key: string): void {
    const task = this.opts.source.get(key);
    if (task) this.index(task);
    else this.unindex(key);
    this.queue.add(key);
    this.wakeDependents(key); // a dependency appeared, changed or vanished
  }

  private index(task: T): void {
    const old = this.known.get(task.key);
    if (!old) {
      const recorded = this.opts.sink.read(task);
      this.spent.set(task.key, recorded?.costUSD ?? 0);
      this.totalSpent += recorded?.costUSD ?? 0;
      const phase = recorded?.phase ?? 'Pending';
      this.phases.set(task.key, phase);
      this.opts.metrics?.movePhase(task.namespace, undefined, phase);
      if (recorded) this.opts.metrics?.leash.trackWaiting(task.key, task.namespace, recorded);
      if (recorded) this.opts.metrics?.resume.trackReview(task.key, task.namespace, recorded);
    }
    if (old) for (const dep of old.dependsOn) this.dependents.get(taskKey(old.namespace, dep))?.delete(task.key);
    for (const dep of task.dependsOn) {
      const depKey = taskKey(task.namespace, dep);
      let set = this.dependents.get(depKey);
      if (!set) this.dependents.set(depKey, (set = new Set()));
      set.add(task.key);
    }
    this.known.set(task.key, task);
  }

  /** The task left its source; `known` keeps it until its episode's end is recorded (release()). */
  private unindex(key: string): void {
    const old = this.known.get(key);
    if (old) for (const dep of old.dependsOn) this.dependents.get(taskKey(old.namespace, dep))?.delete(key);
  }

  private dependencies(task: DesiredTask): {
    dependencies: Record<string, DependencyFact | undefined>;
    dependencyCycle?: string[];
  } {
    const dependencies: Record<string, DependencyFact | undefined> = {};
    if (task.dependsOn.length === 0) return { dependencies };
    for (const dep of task.dependsOn) {
      const depTask = this.opts.source.get(taskKey(task.namespace, dep));
      dependencies[dep] = depTask ? dependencyFact(this.opts.sink.read(depTask)) : undefined;
    }
    return { dependencies, dependencyCycle: this.cycle(task) };
  }

  /** The outputs of each task in dependsOn, as their statuses have them when the episode starts. */
  private upstreamOutputs(task: DesiredTask): UpstreamOutputs {
    const outputs: UpstreamOutputs = {};
    for (const dep of task.dependsOn) {
      const depTask = this.opts.source.get(taskKey(task.namespace, dep));
      outputs[dep] = depTask ? this.opts.sink.read(depTask)?.outputs : undefined;
    }
    return outputs;
  }

  /** The dependsOn cycle through the task, if any, walked through the source. */
  private cycle(task: DesiredTask): string[] | undefined {
    return cycleThrough(task.name, (name) => this.opts.source.get(taskKey(task.namespace, name))?.dependsOn);
  }

  private wakeDependents(key: string): void {
    for (const dependent of this.dependents.get(key) ?? []) this.queue.add(dependent);
  }

  /** As many waiting tasks as there are free slots get another look; one that does not start wakes the next. */
  private wakeSlotWaiters(): void {
    if (this.stopping) return;
    let free = this.freeSlots();
    for (const key of this.slotWaiters) {
      if (free-- <= 0) break;
      this.slotWaiters.delete(key);
      this.queue.add(key);
    }
  }

  private notify(): void {
    const listeners = this.listeners;
    this.listeners = [];
    for (const l of listeners) l();
  }
}

/** A bug or a broken agent report must never replace what is on record with something unreadable. */
function checkStatus(key: string, status: AgentTaskStatus): void {
  const problems = statusProblems(status);
  if (problems.length > 0)
    throw new TerminalError(`refusing to write an invalid status for ${key}: ${problems.slice(0, 3).join('; ')}`);
}

function keyFields(key: string): { namespace: string; task: string } {
  const [namespace, task] = key.split('/') as [string, string];
  return { namespace, task };
}
