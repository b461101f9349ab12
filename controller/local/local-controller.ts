// Local mode: spec directory (source) → pure reconciler → process episodes (executor) → status files (sink).
// One work-queue key per task: a task is reconciled by one worker at a time, so it never has two episodes.
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { emptyStatus, isTerminal, taskKey } from '../api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { episodeResult } from '../api/episode-result.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { killMarkedProcesses, killOrphanEpisode } from '../executors/process-tree.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import { findCycle } from '../reconciler/dependencies.ts';
import { reconcile } from '../reconciler/reconcile.ts';
import type { Action, ObservedEpisode } from '../reconciler/reconcile.ts';
import { FileStatusStore } from '../sinks/file-status.ts';
import type { StoredStatus } from '../sinks/file-status.ts';
import type { LoadedSpecs, SpecTask } from '../sources/spec-files.ts';
import { WorkQueue } from '../core/work-queue.ts';
import { launchEpisode } from './episode-launcher.ts';
import type { LaunchedEpisode } from './episode-launcher.ts';

export interface LocalControllerOptions {
  dir: string;
  stateDir: string;
  maxConcurrent: number;
  budgetUSD?: number;
  logger: Logger;
  /** Undefined when nothing will read them (no --metrics-addr or --metrics-file). */
  metrics?: EpisodicMetrics;
  killGraceMs?: number;
}

export class LocalController {
  readonly store: FileStatusStore;
  private readonly opts: LocalControllerOptions;
  private readonly root: string;
  private specs = new Map<string, SpecTask>();
  /** Specs of tasks whose file went away while an episode ran: needed to record its end. */
  private readonly lastSpecs = new Map<string, SpecTask>();
  private readonly records = new Map<string, StoredStatus>();
  private readonly running = new Map<string, LaunchedEpisode>();
  private readonly finished = new Map<string, ObservedEpisode>();
  private readonly queue: WorkQueue;
  private stopping = false;
  /** Slots promised to episodes between the reconcile that starts them and their spawn (keeps --max-concurrent exact). */
  private starting = 0;
  private changeListeners: Array<() => void> = [];
  /** Tasks whose last reconcile found no free slot (reason Queued), longest waiting first. */
  private readonly slotWaiters = new Set<string>();
  /** Task key → keys of the tasks that dependOn it (rebuilt with every new set of specs). */
  private dependents = new Map<string, string[]>();
  /** Namespace → dependsOn graph of its tasks, for cycle checks (built on demand, dropped with new specs). */
  private graphs = new Map<string, Record<string, string[]>>();
  /** Sum of all recorded costs; undefined when a cost changed since it was last summed. */
  private spentUSD: number | undefined;

  constructor(opts: LocalControllerOptions) {
    this.opts = opts;
    this.root = resolve(opts.dir);
    this.store = new FileStatusStore(opts.stateDir);
    this.queue = new WorkQueue((key) => this.reconcileKey(key), {
      // Measured with 10,000 instant episodes at --max-concurrent 16 (all on tmpfs): 4 workers leave slots
      // idle at times (3.5 of 16 busy on average, since a start or end waits on the spawn helper and fsync),
      // but more workers did not shorten the run (16-19 s at 12-32 workers, 17.4 s at 4) and raised peak
      // RSS from ~170 MB to ~275 MB. The main thread, not the number of workers, is what limits.
      concurrency: 4,
      onError: (key, err) => {
        opts.metrics?.reconcileErrors.inc();
        opts.logger.error({ task: key, err }, 'reconcile failed; will retry');
      },
    });
  }

  /** Reads recorded state and ends episodes a previous (killed) controller left behind. */
  async recover(): Promise<void> {
    const { records, errors } = await this.store.readAll();
    for (const e of errors) this.opts.logger.warn(e);
    for (const record of records) {
      const key = taskKey(record.namespace, record.name);
      this.records.set(key, record);
      this.spentUSD = undefined;
      const current = record.status.currentEpisode;
      if (!current) continue;
      // By the marker its processes carry (agent, verify and descendants); by pid for older state files.
      const killed = record.processMarker
        ? await killMarkedProcesses(record.processMarker)
        : current.pid
          ? await killOrphanEpisode(current.pid, current.pidStartTime)
          : false;
      this.opts.logger.warn(
        { namespace: record.namespace, task: record.name, episode: current.number, orphanKilled: killed },
        'episode interrupted by a controller restart',
      );
      this.finished.set(key, {
        number: current.number,
        state: 'finished',
        startedAt: current.startedAt,
        result: episodeResult({ exitCode: null, interrupted: true, message: 'controller restarted mid-episode' }),
      });
    }
  }

  /** New desired state: reconcile everything it touches. */
  setSpecs(loaded: LoadedSpecs): void {
    const before = this.specs;
    this.specs = loaded.tasks;
    this.graphs = new Map();
    this.dependents = new Map();
    let added = false;
    for (const [key, task] of loaded.tasks) {
      this.lastSpecs.set(key, task);
      if (!before.has(key)) added = true;
      for (const dep of task.spec?.dependsOn ?? []) {
        const depKey = taskKey(task.namespace, dep);
        const list = this.dependents.get(depKey);
        if (list) list.push(key);
        else this.dependents.set(depKey, [key]);
      }
    }
    const keys = new Set([...before.keys(), ...loaded.tasks.keys()]);
    for (const key of keys) {
      if (before.get(key)?.specHash !== loaded.tasks.get(key)?.specHash || !before.has(key)) this.queue.add(key);
    }
    // Dependency phases may now resolve differently (once, not once per new task: O(n²) for many specs).
    if (added) this.enqueueAll();
    this.notify();
  }

  enqueueAll(): void {
    for (const key of new Set([...this.specs.keys(), ...this.running.keys(), ...this.finished.keys()])) this.queue.add(key);
  }

  /** Stop starting episodes, cancel running ones and wait until their ends are recorded. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    for (const episode of this.running.values()) episode.cancel('cancelled');
    while (this.running.size > 0 || this.finished.size > 0) {
      await new Promise<void>((r) => this.onChange(r));
    }
    await this.queue.idle();
    this.queue.stop();
  }

  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  /** Every task terminal (or stuck on something that cannot change without an edit) and nothing running. */
  settled(): boolean {
    if (this.running.size > 0 || this.finished.size > 0 || this.queue.length > 0) return false;
    for (const [key, task] of this.specs) {
      const status = this.records.get(key)?.status;
      if (isTerminal(status?.phase)) continue;
      if (status?.phase === 'Suspended') continue;
      const missingDep = status?.reason === 'DependenciesPending' && (task.spec?.dependsOn ?? []).some((d) => !this.specs.has(taskKey(task.namespace, d)));
      if (missingDep) continue;
      return false;
    }
    return true;
  }

  view(): Array<{ task: SpecTask; status: AgentTaskStatus }> {
    return [...this.specs.values()].map((task) => ({ task, status: this.records.get(task.key)?.status ?? emptyStatus() }));
  }

  totalCost(): number {
    if (this.spentUSD === undefined) {
      let sum = 0;
      for (const r of this.records.values()) sum += r.status.costUSD;
      this.spentUSD = sum;
    }
    return this.spentUSD;
  }

  private async reconcileKey(key: string): Promise<void> {
    const task = this.specs.get(key) ?? this.lastSpecs.get(key);
    if (!task) return;
    const deleted = !this.specs.has(key);
    const record = this.records.get(key);
    if (deleted && !this.running.has(key) && !this.finished.has(key)) return;

    const generation = !record ? 1 : record.specHash === task.specHash ? record.generation : record.generation + 1;
    const before = record?.status ?? emptyStatus();
    const running = this.running.get(key);
    const observed: ObservedEpisode | undefined =
      this.finished.get(key) ?? (running ? { number: running.number, state: 'running', startedAt: running.startedAt } : undefined);
    const out = reconcile({
      namespace: task.namespace,
      name: task.name,
      generation,
      spec: task.spec,
      specError: task.errors.join('; ') || undefined,
      deleted,
      status: before,
      episode: observed,
      ...this.dependencyView(task),
      capacity: !this.stopping && this.running.size + this.starting < this.opts.maxConcurrent,
      globalBudget: this.opts.budgetUSD !== undefined ? { limitUSD: this.opts.budgetUSD, othersSpentUSD: this.totalCost() - before.costUSD } : undefined,
      now: new Date(),
      jitter: Math.random(),
    });
    const next: StoredStatus = { namespace: task.namespace, name: task.name, generation, specHash: task.specHash, status: out.status };
    // Other writes while an episode runs (a spec edit, a message) keep its marker on record.
    const sameEpisode = out.status.currentEpisode !== undefined && out.status.currentEpisode.number === before.currentEpisode?.number;
    if (sameEpisode && record?.processMarker) next.processMarker = record.processMarker;
    const recorded = observed?.state === 'finished' && out.status.currentEpisode?.number !== observed.number;

    const start = out.actions.find((a) => a.type === 'StartEpisode');
    if (start && task.spec) {
      this.starting++;
      try {
        await this.start(task, task.spec, start.number, next, before);
      } finally {
        this.starting--;
      }
    } else {
      await this.persist(next, before);
    }
    // Only the result this pass recorded: the episode just started may already have ended (and be waiting
    // in `finished`) while start() awaited its status write; deleting that would lose it and hang the task.
    if (recorded && this.finished.get(key) === observed) this.finished.delete(key);
    this.act(task, out.actions, {
      started: start ? { episode: start.number, agentPid: this.running.get(key)?.pid } : undefined,
      ended: recorded && observed.result ? { episode: observed.number, ...resultFields(observed.result) } : undefined,
    });
    if (out.requeueAfterMs !== undefined && !start) this.queue.addAfter(key, out.requeueAfterMs);
    if (recorded || before.phase !== out.status.phase) this.wakeDependents(task);
    // A slot this pass freed or left unused (e.g. the task finished) goes to the next waiting task.
    if (!start) this.wakeQueued();
    this.notify();
  }

  /**
   * Starts episode `number` in this order: first "episode N runs, its processes carry marker M" is on
   * record (fsynced and renamed into place), then the agent starts with M in its environment. A crash
   * after the write leaves either no process or processes carrying M; a restart kills those and records
   * the episode as interrupted either way.
   */
  private async start(task: SpecTask, spec: AgentTaskSpec, number: number, record: StoredStatus, before: AgentTaskStatus): Promise<void> {
    const marker = randomUUID();
    record.processMarker = marker;
    // Visible to a restarted controller once renamed into place; the directory fsync after it runs on while
    // the agent starts: only a power loss could undo the rename, and that stops the agent too.
    let visible!: () => void;
    const onRecord = new Promise<void>((resolve) => (visible = resolve));
    const written = this.persist(record, before, visible);
    await Promise.race([onRecord, written]); // `written` settles first when nothing was written, or on failure
    const episode = await launchEpisode({
      root: this.root,
      stateDir: this.opts.stateDir,
      specFile: task.file,
      namespace: task.namespace,
      name: task.name,
      number,
      spec,
      status: record.status,
      killGraceMs: this.opts.killGraceMs,
      marker,
    });
    // Known now, for our own use (stop, logs); a restart goes by the marker.
    const current = record.status.currentEpisode;
    if (episode.pid && current) record.status.currentEpisode = { ...current, pid: episode.pid, pidStartTime: episode.pidStartTime };
    // A shutdown that began while this episode was being recorded did not see it to cancel it.
    if (this.stopping) episode.cancel('cancelled');
    written.catch((err: unknown) => {
      this.opts.metrics?.reconcileErrors.inc();
      this.opts.logger.error({ namespace: task.namespace, task: task.name, episode: number, err }, 'status of a started episode may not survive a power loss');
    });
    this.running.set(task.key, episode);
    void episode.result.then((result) => {
      this.running.delete(task.key);
      this.finished.set(task.key, { number, state: 'finished', startedAt: episode.startedAt, finishedAt: new Date().toISOString(), result });
      // Record the result before starting more episodes: with many waiting tasks it would otherwise queue
      // behind all of them, and what the status files say would lag far behind what happened.
      this.queue.addFirst(task.key);
      this.wakeQueued();
    });
  }

  /**
   * Stops episodes and logs the reconciler's events. The event lines of an episode's start and end carry
   * its details (pid; exit code, error class, cost), so each episode logs two lines, not four.
   */
  private act(task: SpecTask, actions: Action[], episode: { started?: Record<string, unknown>; ended?: Record<string, unknown> }): void {
    const log = this.opts.logger.child({ namespace: task.namespace, task: task.name });
    for (const action of actions) {
      if (action.type === 'StopEpisode') {
        this.running.get(task.key)?.cancel(action.reason);
        log.info({ episode: action.number, reason: action.reason }, 'stopping episode');
      } else if (action.type === 'RecordEvent') {
        const level = action.eventType === 'Warning' ? 'warn' : 'info';
        const details = action.reason === 'EpisodeStarted' ? episode.started : episode.ended;
        log[level]({ event: action.reason, ...details }, action.message);
      }
    }
  }

  private async persist(next: StoredStatus, before: AgentTaskStatus, onVisible?: () => void): Promise<void> {
    const key = `${next.namespace}/${next.name}`;
    const prev = this.records.get(key);
    this.records.set(key, next);
    if (prev?.status.costUSD !== next.status.costUSD) this.spentUSD = undefined;
    if (next.status.reason === 'Queued') this.slotWaiters.add(key);
    else this.slotWaiters.delete(key);
    this.opts.metrics?.observeTransition(next.namespace, before, next.status);
    this.opts.metrics?.movePhase(next.namespace, prev?.status.phase, next.status.phase);
    if (prev && JSON.stringify(prev) === JSON.stringify(next)) return;
    await this.store.write(next, { durable: changesEpisodeFacts(prev?.status ?? emptyStatus(), next.status), onVisible });
  }

  private dependencyView(task: SpecTask): { dependencies: Record<string, Phase | undefined>; dependencyCycle?: string[] } {
    const dependencies: Record<string, Phase | undefined> = {};
    const deps = task.spec?.dependsOn ?? [];
    if (deps.length === 0) return { dependencies };
    let graph = this.graphs.get(task.namespace);
    if (!graph) {
      graph = {};
      for (const t of this.specs.values()) if (t.namespace === task.namespace) graph[t.name] = t.spec?.dependsOn ?? [];
      this.graphs.set(task.namespace, graph);
    }
    for (const d of deps) {
      const key = taskKey(task.namespace, d);
      dependencies[d] = this.specs.has(key) ? (this.records.get(key)?.status.phase ?? 'Pending') : undefined;
    }
    return { dependencies, dependencyCycle: findCycle(task.name, graph) };
  }

  private wakeDependents(task: SpecTask): void {
    for (const key of this.dependents.get(task.key) ?? []) this.queue.add(key);
  }

  /**
   * A slot freed up: as many tasks as there are free slots, longest waiting first, get another look. (Waking
   * every queued task on every episode end made each end cost a reconcile per waiting task: O(n²) for n tasks.)
   * A woken task that does not take its slot leaves the queue, and its reconcile wakes the next one.
   */
  private wakeQueued(): void {
    if (this.stopping) return;
    let free = this.opts.maxConcurrent - this.running.size - this.starting;
    for (const key of this.slotWaiters) {
      if (free <= 0) break;
      if (!this.specs.has(key)) {
        this.slotWaiters.delete(key);
        continue;
      }
      this.queue.add(key);
      free--;
    }
  }

  private notify(): void {
    const listeners = this.changeListeners;
    this.changeListeners = [];
    for (const l of listeners) l();
  }
}

/**
 * Whether `next` records something about episodes that `prev` did not (one started or ended, cost, counters,
 * a final phase). Those writes are fsynced; the rest (Queued, a new message) is recomputed after a restart.
 */
function changesEpisodeFacts(prev: AgentTaskStatus, next: AgentTaskStatus): boolean {
  return (
    prev.episodes !== next.episodes ||
    prev.retries !== next.retries ||
    prev.consecutiveFailures !== next.consecutiveFailures ||
    prev.costUSD !== next.costUSD ||
    prev.currentEpisode?.number !== next.currentEpisode?.number ||
    prev.lastEpisode?.number !== next.lastEpisode?.number ||
    (isTerminal(next.phase) && prev.phase !== next.phase)
  );
}

/** What an episode-end log line says about the result. */
function resultFields(result: EpisodeResult): Record<string, unknown> {
  return { exitCode: result.exitCode, errorClass: result.errorClass, costUSD: result.costUSD, completion: result.completion };
}
