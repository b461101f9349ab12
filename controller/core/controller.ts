// The one controller loop of both modes: a keyed work queue over the three ports. Each pass gathers the
// facts (desired task, recorded status, observed episode, dependencies, slots, spend), asks the pure
// reconcile() what to do, and does it in crash-safe order: status on record first, then the episode.
// Like controller-runtime, the loop owns requeue (requeueAfter), retry with backoff, and forget.
import type { Logger } from 'pino';
import { emptyStatus, isTerminal, taskKey } from '../api/agent-task.ts';
import type { AgentTaskStatus, Phase } from '../api/agent-task.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { episodeRecordOf } from '../api/episode-record.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import { findCycle } from '../reconciler/dependencies.ts';
import { reconcile } from '../reconciler/reconcile.ts';
import { awaitingAutoResume } from '../reconciler/resume.ts';
import type { ObservedEpisode, StopReason } from '../reconciler/reconcile.ts';
import { BudgetBook } from './budget-book.ts';
import type { BudgetStore } from './budget-book.ts';
import { systemClock } from './clock.ts';
import type { Clock } from './clock.ts';
import { StoreFullError, TerminalError } from './ports.ts';
import type { DesiredTask, EpisodeExecutor, StatusSink, TaskSource } from './ports.ts';
import { WorkQueue } from './work-queue.ts';

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
}

// A dependsOn walk stops here: a cycle check must not stall the loop on a pathological graph.
const MAX_GRAPH_NODES = 10_000;

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
  private reserved = 0;
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
  }

  /** Indexes what the ports know and reconciles every task once. */
  start(): void {
    for (const task of this.opts.source.list()) {
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
    if (this.busy() || this.opts.executor.runningCount() > 0) return false;
    for (const task of this.opts.source.list()) {
      const status = this.opts.sink.read(task);
      // A scheduled auto-resume is waited for (its cooldown); a held one leaves the task settled.
      if ((isTerminal(status?.phase) && !awaitingAutoResume(status)) || status?.phase === 'Suspended') continue;
      if (
        status?.reason === 'DependenciesPending' &&
        task.dependsOn.some((d) => !this.opts.source.get(taskKey(task.namespace, d)))
      )
        continue;
      return false;
    }
    return true;
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
    const episode = this.observe(task, before, now);
    if (deleted && !before.currentEpisode && episode?.state !== 'running') return this.release(task, !current);

    const out = reconcile({
      namespace: task.namespace,
      name: task.name,
      generation: task.generation,
      spec: task.spec,
      specError: task.specError,
      deleted,
      shuttingDown: this.stopping,
      status: before,
      episode,
      stopRequested: this.stops.get(key),
      resumeRequest: task.resumeRequest,
      ...this.dependencies(task),
      capacity: !this.stopping && executor.runningCount() + this.reserved < this.opts.maxConcurrent,
      globalBudget:
        this.opts.budgetUSD !== undefined
          ? { limitUSD: this.opts.budgetUSD, othersSpentUSD: this.totalSpent - (this.spent.get(key) ?? 0) }
          : undefined,
      budgets: deleted ? undefined : this.budgetBook?.facts(task, before, now),
      now,
      jitter: (this.opts.random ?? Math.random)(),
    });
    this.budgetBook?.afterPass(task, before, out.status, out.heldByBudgets, now);
    const { status } = out;
    const start = out.actions.find((a) => a.type === 'StartEpisode');
    const retry = this.pendingStarts.get(key);
    const startNumber =
      start?.number ?? (retry !== undefined && retry === status.currentEpisode?.number ? retry : undefined);
    const ended =
      episode !== undefined &&
      episode.state !== 'running' &&
      episode.number === before.currentEpisode?.number &&
      status.currentEpisode?.number !== episode.number;
    // Before the first await: parallel passes must see the slot taken and the spend counted.
    if (startNumber !== undefined) this.reserved++;
    this.noteDecided(task, before, status);
    try {
      if (!deleted) await source.hold(task); // in charge before anything of the task exists
      await sink.write(task, status, { beforeStart: startNumber !== undefined });
      await this.budgetBook?.flush();
      // The finished episode's immutable record, once the status that records it is written. Its reason is
      // the status's, unless the next episode started at once (the reason is then about that one).
      const last = status.lastEpisode;
      const reason = status.currentEpisode ? undefined : status.reason;
      if (ended && episode && last?.number === episode.number)
        await sink.recordEpisode(task, episodeRecordOf(task.name, last, reason, episode.result));
      const endDetails = ended && episode ? resultFields(episode, status) : {};
      for (const a of out.actions) {
        if (a.type === 'RecordEvent' && a.reason !== 'EpisodeStarted')
          sink.event(task, a.eventType, a.reason, a.message, endDetails);
      }
      for (const a of out.actions) {
        if (a.type !== 'StopEpisode') continue;
        this.stops.set(key, { number: a.number, reason: a.reason });
        await executor.stop(task, a.number, a.reason);
      }
      if (startNumber !== undefined) {
        this.pendingStarts.set(key, startNumber);
        const details = await executor.start(task, startNumber, status);
        this.pendingStarts.delete(key);
        const event = out.actions.find((a) => a.type === 'RecordEvent' && a.reason === 'EpisodeStarted');
        if (event?.type === 'RecordEvent')
          sink.event(task, event.eventType, event.reason, event.message, { episode: startNumber, ...details });
      }
    } finally {
      if (startNumber !== undefined) this.reserved--;
    }
    if (!status.currentEpisode) this.stops.delete(key);
    if (status.reason === 'Queued') this.slotWaiters.add(key);
    else this.slotWaiters.delete(key);

    const delays = [out.requeueAfterMs, episode?.recheckAfterMs].filter((d): d is number => d !== undefined);
    if (delays.length > 0) this.queue.addAfter(key, Math.min(...delays));
    if (ended || before.phase !== status.phase) this.wakeDependents(key);
    if (startNumber === undefined) this.wakeSlotWaiters(); // a slot this pass left unused goes to the next waiting task
    if (deleted && !status.currentEpisode) return this.release(task, !current);
    await executor.tidy(task, status);
  }

  /** What the executor sees, except that an episode whose start is being retried has not vanished. */
  private observe(task: T, status: AgentTaskStatus, now: Date): ObservedEpisode | undefined {
    const episode = this.opts.executor.observe(task, status, now);
    const retrying = this.pendingStarts.get(task.key);
    if (episode?.state === 'gone' && !episode.removedBy && episode.number === retrying) return undefined;
    return episode;
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
    dependencies: Record<string, Phase | undefined>;
    dependencyCycle?: string[];
  } {
    const dependencies: Record<string, Phase | undefined> = {};
    if (task.dependsOn.length === 0) return { dependencies };
    for (const dep of task.dependsOn) {
      const depTask = this.opts.source.get(taskKey(task.namespace, dep));
      const status = depTask ? this.opts.sink.read(depTask) : undefined;
      // A dependency stopped for review with an auto-resume scheduled has not failed yet: its dependents wait.
      dependencies[dep] = depTask ? (awaitingAutoResume(status) ? 'Waiting' : (status?.phase ?? 'Pending')) : undefined;
    }
    return { dependencies, dependencyCycle: this.cycle(task) };
  }

  /** The dependsOn graph reachable from the task, walked through the source. */
  private cycle(task: DesiredTask): string[] | undefined {
    const graph: Record<string, string[]> = {};
    const todo = [task.name];
    let nodes = 0;
    while (todo.length > 0 && nodes++ < MAX_GRAPH_NODES) {
      const node = todo.pop() as string;
      if (graph[node]) continue;
      graph[node] = [...(this.opts.source.get(taskKey(task.namespace, node))?.dependsOn ?? [])];
      todo.push(...graph[node]);
    }
    return findCycle(task.name, graph);
  }

  private wakeDependents(key: string): void {
    for (const dependent of this.dependents.get(key) ?? []) this.queue.add(dependent);
  }

  /** As many waiting tasks as there are free slots get another look; one that does not start wakes the next. */
  private wakeSlotWaiters(): void {
    if (this.stopping) return;
    let free = this.opts.maxConcurrent - this.opts.executor.runningCount() - this.reserved;
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

/** Log fields of an episode's end: the event line says how it went. */
function resultFields(episode: ObservedEpisode, status: AgentTaskStatus): Record<string, unknown> {
  const result: EpisodeResult | undefined = episode.result;
  return {
    episode: episode.number,
    outcome: status.lastEpisode?.outcome,
    exitCode: result?.exitCode ?? null,
    errorClass: result?.errorClass,
    costUSD: result?.costUSD ?? 0,
    completion: result?.completion,
  };
}

function keyFields(key: string): { namespace: string; task: string } {
  const [namespace, task] = key.split('/') as [string, string];
  return { namespace, task };
}
