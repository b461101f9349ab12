import { emptyStatus, taskKey } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { statusProblems } from '../api/validate.ts';
import type { CredentialsPaused } from '../reconciler/credentials-hold.ts';
import { reconcile } from '../reconciler/reconcile.ts';
import type { Action, ObservedEpisode, ReconcileInput, ReconcileResult } from '../reconciler/reconcile.ts';
import { settled } from '../reconciler/settled.ts';
import { withCredentialsChosen } from '../reconciler/credentials-choice.ts';
import { diffsWanted } from '../reconciler/attempts.ts';
import type { SpawnFacts } from '../reconciler/spawn-decide.ts';
import { BudgetBook } from './budget-book.ts';
import { systemClock } from './clock.ts';
import type { Clock } from './clock.ts';
import { StoreFullError, TerminalError } from './ports.ts';
import type { DesiredTask } from './ports.ts';
import { DependencyGraph } from './dependency-graph.ts';
import { TaskTally } from './task-tally.ts';
import { Slots } from './slots.ts';
import type { ControllerOptions } from './controller-options.ts';
import { countEpisodeOps, opsFollow } from './ops-loop.ts';
import { LoopMemory } from './loop-memory.ts';
import { performActions } from './perform-actions.ts';
import { WorkQueue } from './work-queue.ts';

export type { ControllerOptions } from './controller-options.ts';

export class Controller<T extends DesiredTask = DesiredTask> {
  private readonly opts: ControllerOptions<T>;
  private readonly queue: WorkQueue;
  private readonly clock: Clock;
  /** The last desired state seen per key: a task deleted while its episode runs still needs its end recorded. */
  private readonly known = new Map<string, T>();
  private readonly graph: DependencyGraph<T>;
  private readonly tally: TaskTally;
  /** What a pass leaves for the task's next one (a stop asked for, a start to retry, ops applied, an adoption). */
  private readonly memory = new LoopMemory();
  private readonly slots: Slots;
  private stopping = false;
  private listeners: Array<() => void> = [];
  private readonly budgetBook: BudgetBook | undefined;

  constructor(opts: ControllerOptions<T>) {
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.graph = new DependencyGraph(opts.source, opts.sink);
    this.tally = new TaskTally(opts.metrics);
    this.slots = new Slots(opts.maxConcurrent, () => opts.executor.runningCount());
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
        liveSpend: opts.executor.liveSpend && ((t) => opts.executor.liveSpend?.(t)),
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
      // Its tasks: those naming it, and those without a name (it may be, or have become, the namespace default).
      for (const t of opts.source.list()) {
        const written = t.spec?.agent.credentials;
        if (t.namespace === ns && (written === name || written === undefined)) this.queue.add(t.key);
      }
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
    for (const key of [...this.opts.executor.keys(), ...this.slots.waiting()]) this.queue.add(key);
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
    while (this.slots.free(this.stopping) <= 0) {
      if (this.stopping) throw new Error('the controller is stopping: no slot for a resolution episode');
      await this.nextChange();
    }
    this.slots.lend();
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.slots.giveBack();
      this.wakeSlotWaiters();
    };
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
    return this.queue.length > 0 || this.slots.anyReserved || this.inFlight > 0;
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
    const written = current ?? this.known.get(key);
    if (!written) return executor.forget(key);
    // From here on spec.agent.credentials is the AgentCredentials chosen (a default too): one rule decides it.
    const { task, choice: credentials } = withCredentialsChosen(written, this.namespaceCredentials(written));
    const deleted = !current || task.deleting;
    const now = this.clock.now();
    const before = sink.read(task) ?? emptyStatus();
    const episode = executor.observe(task, before, now);
    const credentialsPaused = deleted ? undefined : await this.opts.credentialsPaused?.(task);
    const spawn = deleted ? undefined : await this.opts.spawn?.facts(task, before);
    const attemptDiffs = await this.attemptDiffs(task, before, spawn);
    const pass = { deleted, before, episode, now, credentialsPaused };
    const out = reconcile({ ...this.facts(task, pass), spawn, attemptDiffs, credentials });
    if (out.actions.some((a) => a.type === 'RecordEpisode')) countEpisodeOps(this.opts.metrics, task, episode);
    this.budgetBook?.afterPass(task, before, out.status, out.heldByBudgets, now);
    this.opts.spawn?.afterPass(task, out.status);
    const starts = out.actions.some((a) => a.type === 'StartEpisode');
    // Before the first await: parallel passes must see the slot taken and the spend counted.
    if (starts) this.slots.reserve();
    this.tally.decided(task, before, out.status);
    try {
      if (!deleted) await source.hold(task); // in charge before anything of the task exists
      await this.recordEpisodes(task, out.actions);
      if (!out.keepsStatus) await this.writeStatus(task, out.status, starts);
      const promptVars = spawn && this.opts.spawn?.promptVars(spawn, out.status);
      const performed = promptVars ? { ...task, promptVars } : task;
      await performActions(
        { opts: this.opts, memory: this.memory, graph: this.graph },
        performed,
        out.status,
        out.actions,
      );
      await this.opts.spawn?.afterWrite(task, before, out.status, spawn, (k) => this.queue.add(k));
    } finally {
      if (starts) this.slots.unreserve();
    }
    this.schedule(key, out, starts);
    if (out.actions.some((a) => a.type === 'ReleaseTask')) return this.release(task, !current);
    await executor.tidy(task, out.status);
  }

  /**
   * The records of the episodes that ended, before the status that reports their end: whoever sees that status
   * finds the record (a crash between the two appends it again; the last line of a number wins, an AgentEpisode
   * created twice is AlreadyExists). A record that names refused ops follows them (perform).
   */
  private async recordEpisodes(task: T, actions: readonly Action[]): Promise<void> {
    for (const a of actions)
      if (a.type === 'RecordEpisode' && !opsFollow(actions, a.record.number))
        await this.opts.sink.recordEpisode(task, a.record);
  }

  private async writeStatus(task: T, status: AgentTaskStatus, starts: boolean): Promise<void> {
    checkStatus(task.key, status);
    await this.opts.sink.write(task, status, { beforeStart: starts });
    await this.budgetBook?.flush();
  }

  private namespaceCredentials(task: T) {
    return this.opts.namespaceCredentials?.(task.namespace) ?? [];
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
      ...this.memory.facts(key),
      resumeRequest: task.resumeRequest,
      hold: task.hold,
      ...this.graph.facts(task),
      freeSlots: this.slots.free(this.stopping),
      globalBudget:
        this.opts.budgetUSD !== undefined
          ? { limitUSD: this.opts.budgetUSD, othersSpentUSD: this.tally.spentByOthers(key) }
          : undefined,
      budgets: pass.deleted ? undefined : this.budgetBook?.facts(task, pass.before, pass.now),
      adoption: { supported: this.opts.executor.adoptWinner !== undefined, outcome: this.memory.adopted.get(key) },
      credentialsPaused: pass.credentialsPaused,
      now: pass.now,
      jitter: (this.opts.random ?? Math.random)(),
    };
  }

  /** What the pass means for the queue: a requeue, the slot waiters, the dependents. */
  private schedule(key: string, out: ReconcileResult, started: boolean): void {
    if (!out.status.currentEpisode) this.memory.stops.delete(key);
    this.slots.setWaiting(key, out.waitsForSlot);
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
    this.memory.forget(task.key);
    this.slots.setWaiting(task.key, false);
    this.tally.forget(task);
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
    if (!old) this.tally.seen(task, this.opts.sink.read(task));
    this.graph.index(task, old);
    this.known.set(task.key, task);
  }

  /** The task left its source; `known` keeps it until its episode's end is recorded (release()). */
  private unindex(key: string): void {
    const old = this.known.get(key);
    if (old) this.graph.unindex(old);
  }

  private wakeDependents(key: string): void {
    for (const dependent of this.graph.dependentsOf(key)) this.queue.add(dependent);
  }

  /** As many waiting tasks as there are free slots get another look; one that does not start wakes the next. */
  private wakeSlotWaiters(): void {
    for (const key of this.slots.takeWaiters(this.stopping)) this.queue.add(key);
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
