// Local mode: a spec directory (source), processes (executor) and status files (sink) under the one
// controller loop. This file only wires them and answers what `episodic run` asks.
import { withCredentialsChosen } from '../reconciler/credentials-choice.ts';
import { namespaceCredentials } from '../sources/local/credentials-files.ts';
import type { SpecCredentials } from '../sources/local/credentials-files.ts';
import { gatewayCredentials } from '../api/agent-credentials.ts';
import type { TaskOwner } from '../core/created-tasks.ts';
import { secretEnvNames } from '../api/agent-env.ts';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { emptyStatus, isTerminal } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import type { Clock } from '../core/clock.ts';
import type { CredentialsPaused } from '../reconciler/credentials-hold.ts';
import type { StoreFullError } from '../core/ports.ts';
import { Controller } from '../core/controller.ts';
import { ProcessEpisodeExecutor } from '../executors/local/process-executor.ts';
import { LocalGatewayBinding } from '../executors/local/gateway-binding.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import { writeFileAtomicSync } from '../util/atomic-write.ts';
import { controllerIdPath } from '../util/state-layout.ts';
import { LocalBudgetStore } from '../sinks/local/budget-store.ts';
import { FileStatusSink } from '../sinks/local/file-status-sink.ts';
import type { StoredStatus } from '../sinks/local/file-status.ts';
import type { LoadedSpecs, SpecTask } from '../sources/local/spec-files.ts';
import { SpecDirSource } from '../sources/local/spec-dir-source.ts';
import { ResumeRequestWatch } from '../sources/local/resume-requests.ts';
import { HoldWatch } from '../sources/local/hold-files.ts';
import type { LocalTask } from '../sources/local/spec-dir-source.ts';
import { LocalCreatedTasks, withCreatedTasks } from '../sources/local/created-tasks.ts';
import { LocalOpsApplier } from '../ops/local-ops.ts';
import { deletingOwnedTasks } from '../core/owned-tasks.ts';
import { SpawnLoop } from '../core/spawn-loop.ts';
import { systemClock } from '../core/clock.ts';
import { spawnAndSend } from '../ops/spawn-send.ts';
import { LocalMailboxes } from '../sinks/local/mailboxes.ts';
import { LocalMailboxWatch } from '../sinks/local/mailbox-watch.ts';
import { MergeQueueLoop } from '../core/merge-queue-loop.ts';
import type { QueueEpisodes } from '../core/merge-queue-ports.ts';
import { localQueuePorts } from '../executors/local/merge-queue.ts';
import type { LocalQueueTask } from '../executors/local/merge-queue.ts';

export interface LocalControllerOptions {
  dir: string;
  stateDir: string;
  maxConcurrent: number;
  budgetUSD?: number;
  logger: Logger;
  /** Undefined when nothing will read them (no --metrics-addr or --metrics-file). */
  metrics?: EpisodicMetrics;
  killGraceMs?: number;
  /** Tests: a virtual clock for budget windows. */
  clock?: Clock;
}

// More reconciles in flight did not shorten runs of many instant episodes and cost memory (bench/README.md).
const WORKERS = 4;

export class LocalController {
  private readonly opts: LocalControllerOptions;
  private readonly sink: FileStatusSink;
  private readonly source: SpecDirSource;
  readonly budgets: LocalBudgetStore;
  private executor: ProcessEpisodeExecutor | undefined;
  private loop: Controller<LocalTask> | undefined;
  private started = false;
  private mergeQueue: MergeQueueLoop<LocalQueueTask> | undefined;
  private stopped = false;
  private readonly requests: ResumeRequestWatch;
  private readonly holds: HoldWatch;
  /** Tasks the system creates (spawned children, triggers' tasks): read with the user's specs. */
  readonly created: LocalCreatedTasks;
  readonly mailboxes: LocalMailboxes;
  /** Messages arriving (an op, `episodic send` from another process) wake their task at once. */
  private readonly mailboxWatch: LocalMailboxWatch;
  /** The user's specs as last set: created tasks are merged over them again when one is added or removed. */
  private userSpecs: LoadedSpecs | undefined;
  /** The model gateway, started with the first episode of a task with spec.agent.credentials. */
  private readonly gateway: LocalGatewayBinding;
  /** The loop's listeners for AgentCredentials edits (credentialsChanged). */
  private readonly credentialsEdited: Array<(namespace: string, name: string) => void> = [];

  constructor(opts: LocalControllerOptions) {
    this.opts = opts;
    this.sink = new FileStatusSink(opts.stateDir, opts.logger);
    this.budgets = new LocalBudgetStore(opts.stateDir, opts.logger);
    this.source = new SpecDirSource();
    this.gateway = new LocalGatewayBinding({
      lookup: () => this.userSpecs?.credentials?.values() ?? [],
      log: opts.logger,
      stateDir: opts.stateDir,
      clock: opts.clock,
      metrics: opts.metrics?.gateway,
    });
    this.mailboxes = new LocalMailboxes(opts.stateDir);
    this.mailboxWatch = new LocalMailboxWatch(opts.stateDir);
    this.created = new LocalCreatedTasks({
      stateDir: opts.stateDir,
      userTask: (namespace, name) => this.userSpecs?.tasks.has(`${namespace}/${name}`) ?? false,
      onChange: () => {
        if (this.userSpecs && this.started) this.source.set(withCreatedTasks(this.userSpecs, this.opts.stateDir));
      },
    });
    this.requests = new ResumeRequestWatch(
      opts.stateDir,
      (key, request) => this.source.setResumeRequest(key, request),
      (message) => opts.logger.error(message),
    );
    this.holds = new HoldWatch(
      opts.stateDir,
      (key, hold) => this.source.setHold(key, hold),
      (message) => opts.logger.error(message),
    );
  }

  /** Reads what is on record and ends the episodes a previous (killed) controller left behind. */
  async recover(userSpecs?: LoadedSpecs): Promise<void> {
    const specs = userSpecs && withCreatedTasks(userSpecs, this.opts.stateDir);
    const records = await this.sink.load();
    this.source.recall(records, this.sink.unreadable);
    await this.budgets.load();
    this.executor = new ProcessEpisodeExecutor({
      root: resolve(this.opts.dir),
      stateDir: this.opts.stateDir,
      stateId: stateId(this.opts.stateDir),
      logger: this.opts.logger,
      killGraceMs: this.opts.killGraceMs,
      gateway: this.gateway,
    });
    await this.executor.recover(records, specs?.tasks);
    const deletedTasks = specs ? this.deletedWhileStopped(records, specs) : [];
    this.loop = new Controller<LocalTask>({
      source: deletingOwnedTasks(this.source, { created: this.created, mailboxes: this.mailboxes }),
      executor: this.executor,
      sink: this.sink,
      logger: this.opts.logger,
      maxConcurrent: this.opts.maxConcurrent,
      budgetUSD: this.opts.budgetUSD,
      budgets: this.budgets,
      clock: this.opts.clock,
      workers: WORKERS,
      metrics: this.opts.metrics,
      deletedTasks,
      ops: new LocalOpsApplier<LocalTask>(
        this.opts.stateDir,
        spawnAndSend<LocalTask>({
          created: this.created,
          mailboxes: this.mailboxes,
          ownerOf: localOwner,
          tasks: this.source,
          statuses: this.sink,
          clock: this.opts.clock,
        }),
      ),
      spawn: new SpawnLoop<LocalTask>({
        source: this.source,
        sink: this.sink,
        mailboxes: this.mailboxes,
        created: { store: this.created, ownerOf: localOwner },
      }),
      mailboxEvents: this.mailboxWatch,
      credentialsPaused: (task) => this.credentialsPaused(task),
      namespaceCredentials: (namespace) => this.namespaceCredentials(namespace),
      credentialEvents: {
        subscribe: (fn) => {
          this.gateway.pauses.subscribe(fn);
          this.credentialsEdited.push(fn);
        },
      },
    });
  }

  /** The AgentCredentials documents of the namespace (the loop chooses a task's among them). */
  private namespaceCredentials(namespace: string) {
    return namespaceCredentials(this.userSpecs?.credentials?.values() ?? [], namespace);
  }

  /** An AgentCredentials document added, edited or removed: the tasks that may use it are looked at again. */
  private credentialsChanged(before: LoadedSpecs | undefined, after: LoadedSpecs): void {
    const old = before?.credentials ?? new Map();
    const now = after.credentials ?? new Map();
    for (const key of new Set([...old.keys(), ...now.keys()])) {
      const was = old.get(key);
      const is = now.get(key);
      if (was?.specHash === is?.specHash) continue;
      const { namespace, name } = (is ?? was) as SpecCredentials;
      for (const fn of this.credentialsEdited) fn(namespace, name);
    }
  }

  /** The reconciler's fact: every credential of the task's AgentCredentials is paused, until the earliest reset. */
  private async credentialsPaused(task: LocalTask): Promise<CredentialsPaused | undefined> {
    const credentials = task.spec && gatewayCredentials(task.spec);
    const until = credentials ? await this.gateway.pausedUntil(task.namespace, credentials) : undefined;
    return credentials && until ? { credentials, until } : undefined;
  }

  /**
   * Tasks on record whose spec is gone, as deleted tasks. Not while a spec document could not be read (a
   * YAML error): it may be theirs, so their status stays, and its episode is read again next time.
   */
  private deletedWhileStopped(records: readonly StoredStatus[], specs: LoadedSpecs): LocalTask[] {
    const specless = records.filter((r) => !specs.tasks.has(`${r.namespace}/${r.name}`));
    if (specless.length === 0) return [];
    if (specs.parsed.some((file) => file.errors.length > 0)) {
      const tasks = specless.map((r) => `${r.namespace}/${r.name}`).join(', ');
      this.opts.logger.warn(
        { tasks },
        'no spec found for tasks on record, but some spec document could not be read: their status is kept',
      );
      return [];
    }
    return specless.map((r) => this.source.deletedWhileStopped(r));
  }

  /** New desired state; the first call starts the loop. */
  setSpecs(loaded: LoadedSpecs): void {
    const loop = this.requireLoop();
    if (!this.started) {
      this.requests.scan(); // requests and holds made while no controller ran
      this.holds.scan();
    }
    this.budgets.set(loaded);
    this.executor?.withholdEnv(secretEnvNames([...(loaded.triggers?.values() ?? [])].map((t) => t.spec)));
    const before = this.userSpecs;
    this.userSpecs = loaded;
    this.source.set(withCreatedTasks(loaded, this.opts.stateDir));
    this.credentialsChanged(before, loaded);
    if (this.started) return;
    this.started = true;
    this.mailboxWatch.start();
    loop.start();
    this.startMergeQueue(loop);
    this.requests.start(); // watched from here on: a request or hold is seen as it is written
    this.holds.start();
  }

  /** spec.integrate: after every pass (or each second) the merge queues take their next steps. */
  private startMergeQueue(loop: Controller<LocalTask>): void {
    const queue = new MergeQueueLoop({
      ports: localQueuePorts(this.opts.stateDir, () => this.userSpecs?.triggers),
      logger: this.opts.logger,
      clock: this.opts.clock ?? systemClock,
      metrics: this.opts.metrics?.mergeQueue,
      episodes: this.queueEpisodes(loop),
      writeStatus: async (key, status) => {
        const task = this.source.get(key);
        if (task) await this.sink.write(task, status, { beforeStart: false });
      },
    });
    this.mergeQueue = queue;
    const tick = (): void => {
      if (this.stopped) return;
      queue.scan(this.queueTasks());
      void loop.nextChange().then(tick);
    };
    tick();
  }

  /** The queue's resolution episodes: the executor runs them, the sink records them, as any episode. */
  private queueEpisodes(loop: Controller<LocalTask>): QueueEpisodes {
    const task = (key: string): LocalTask => {
      const t = this.source.get(key);
      if (!t) throw new Error(`${key}: no such task for a resolution episode`);
      // A resolution episode goes through the same AgentCredentials as the task's own episodes.
      return withCredentialsChosen(t, this.namespaceCredentials(t.namespace)).task;
    };
    const executor = (): ProcessEpisodeExecutor => {
      if (!this.executor) throw new Error('the merge queue ran before recover()');
      return this.executor;
    };
    return {
      slot: () => loop.takeSlot(),
      run: (key, run) => executor().resolve(task(key), run),
      kill: (key, number) => executor().killResolution(task(key), number),
      record: (key, record) => this.sink.recordEpisode(task(key), record),
    };
  }

  private queueTasks(): LocalQueueTask[] {
    const out: LocalQueueTask[] = [];
    for (const task of this.source.list()) {
      const status = this.sink.read(task);
      if (task.spec?.integrate && status && !task.deleting) out.push({ ...task, spec: task.spec, status });
    }
    return out;
  }

  /** Stop starting episodes, stop running ones and wait until their ends are recorded. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    await this.mergeQueue?.stop();
    this.requests.stop();
    this.mailboxWatch.stop();
    this.holds.stop();
    await this.loop?.shutdown();
    await this.gateway.close();
  }

  /** Calls listener once, after the next reconcile pass (or within a second). */
  onChange(listener: () => void): void {
    void this.requireLoop().nextChange().then(listener);
  }

  /** Whether the task's recorded phase is terminal (triggers count their unfinished tasks). */
  finished(namespace: string, name: string): boolean {
    return isTerminal(this.sink.read({ key: `${namespace}/${name}` })?.phase);
  }

  /** A task's recorded status (a trigger's report shows it). */
  taskStatus(namespace: string, name: string): AgentTaskStatus | undefined {
    return this.sink.read({ key: `${namespace}/${name}` });
  }

  settled(): boolean {
    if (this.mergeQueue) this.mergeQueue.scan(this.queueTasks());
    return this.requireLoop().settled() && (this.mergeQueue?.idle() ?? true);
  }

  /** Set while the state disk has no room for a status write (see FileStatusSink.full). */
  storeFull(): StoreFullError | undefined {
    return this.sink.full;
  }

  /**
   * The state disk is full and `run` gives up: stop the running episodes (their ends could not be recorded,
   * so the next run reads them from the status on record and their logs) and stop the loop. Writes nothing.
   */
  async abandon(): Promise<void> {
    this.requests.stop();
    this.mailboxWatch.stop();
    this.holds.stop();
    const loop = this.requireLoop();
    this.executor?.cancelAll();
    while ((this.executor?.runningCount() ?? 0) > 0) await loop.nextChange();
    loop.halt();
    await this.gateway.close();
  }

  view(): Array<{ task: SpecTask; status: AgentTaskStatus }> {
    return [...this.source.list()].map((task) => ({
      task: task.source,
      status: this.sink.read(task) ?? emptyStatus(),
    }));
  }

  private requireLoop(): Controller<LocalTask> {
    if (!this.loop) throw new Error('LocalController.recover() must run first');
    return this.loop;
  }
}

/**
 * A random id kept in the state directory: markers of episodes recorded there start with it, so they can
 * never match the processes of another state directory (or anything else).
 */
function stateId(stateDir: string): string {
  const file = controllerIdPath(stateDir);
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f-]{36}$/.test(id)) return id;
  } catch {
    // first run in this directory
  }
  const id = randomUUID();
  // Whole or not at all: a torn id would be replaced by a new one, and the old episodes' markers lost.
  writeFileAtomicSync(file, `${id}\n`, { flush: true });
  return id;
}

/** A local task as the owner of the tasks it creates: its spec file resolves their relative paths. */
function localOwner(t: LocalTask): TaskOwner {
  return { kind: 'AgentTask', namespace: t.namespace, name: t.name, file: t.file };
}
