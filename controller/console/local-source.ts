// The console's view of a local state dir: the rows of every task kept in memory, re-read one status file
// at a time as fs.watch reports it changed, and log growth passed on, so an open page follows a run live.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { DirWatch } from '../util/dir-watch.ts';
import { emptyStatus, taskKey } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import type { SuspendHold } from '../api/hold.ts';
import { lockHolder } from '../util/state-lock.ts';
import { readHold, setLocalHold } from '../sources/local/hold-files.ts';
import { requestLocalResume } from '../sources/local/resume-requests.ts';
import type { LoadedSpecs, SpecTask } from '../sources/local/spec-files.ts';
import { localEpisodeLog } from './local-logs.ts';
import type { EpisodeLog, LogRequest } from './log-text.ts';
import { ConsoleEvents } from './console-events.ts';
import { FirstStarts } from './first-starts.ts';
import { localBoardAndMail } from './board-view.ts';
import { originOf } from './origin.ts';
import { triggerView } from './trigger-views.ts';
import type { TriggerView } from './trigger-views.ts';
import { readBudgets, readEpisodes, readLocalState, readStoredStatus } from './local-state.ts';
import { readTriggerStatus, readTriggerStatuses } from './local-triggers.ts';
import {
  episodeLogPath,
  episodeOfLogFile,
  holdPath,
  statusDir,
  statusPath,
  taskLogsDir,
  triggerStatusDir,
} from '../util/state-layout.ts';
import {
  childrenOf,
  gateLimitsOf,
  identityOfSpec,
  pullRequestOf,
  pullRequestsChanged,
  taskRow,
  triggerKeyOf,
} from './views.ts';
import type {
  ActionOutcome,
  BudgetView,
  ConsoleEvent,
  ConsoleSource,
  ResumeOutcome,
  TaskDetail,
  TaskRow,
} from './views.ts';

/** The controller's own tasks and statuses (`run --console`). */
export type FollowedView = Array<{ task: SpecTask; status: AgentTaskStatus }>;

export class LocalConsoleSource implements ConsoleSource {
  private readonly dir: string;
  private readonly stateDir: string;
  private specs: LoadedSpecs | undefined;
  private readonly rowsByKey = new Map<string, TaskRow>();
  private readonly events = new ConsoleEvents();
  private readonly watches = new DirWatch();
  private closed = false;
  private started = false;
  private waitForState: NodeJS.Timeout | undefined;
  /** Each trigger's recorded status (STATE/triggers), for its tasks' PR links. */
  private triggerStatuses = new Map<string, unknown>();
  /** The serial chain every read of state runs on (see enqueue). */
  private work: Promise<void> = Promise.resolve();
  private reloadQueued = false;
  /** Keys with a status read queued and not yet begun: a further write to them needs no second read. */
  private readonly readQueued = new Set<string>();
  /** `run --console`: the controller's statuses are the rows (follow), compared by identity. */
  private followed = false;
  private readonly seenStatus = new Map<string, AgentTaskStatus>();
  /** Each task's first episode start, once known (a later status no longer says it). */
  private readonly firstStarts: FirstStarts;

  /** `run --watch --hooks-addr`: where hooks are served ("http://host:port"), for each trigger's hook URL. */
  private hooksBase: string | undefined;

  constructor(dir: string, stateDir: string, hooksBase?: string) {
    this.dir = dir;
    this.stateDir = stateDir;
    this.hooksBase = hooksBase;
    this.firstStarts = new FirstStarts(stateDir, (key, startedAt) => {
      const row = this.rowsByKey.get(key);
      if (row) this.setRow({ ...row, startedAt });
    });
  }

  async start(): Promise<void> {
    // Watching before the first read: a write between the two is seen (its read is queued after this one).
    if (existsSync(this.statusRoot)) this.watchStatus();
    else {
      // Started before any run: the status directory appears with the first one.
      this.waitForState = setInterval(() => {
        if (!existsSync(this.statusRoot)) return;
        clearInterval(this.waitForState);
        this.watchStatus();
        this.requestReload();
      }, 500);
      this.waitForState.unref();
    }
    this.requestReload();
    // The first reload only: what it queues after (first episode starts) comes once the page is served.
    await this.work;
  }

  /** `run --console`: rows come from the controller's own statuses (`view`), re-read after each of its passes;
   * status files are no longer watched, so no file read can race a newer write. `hooksUrl`: the hook server's
   * bound address ("http://host:port/hooks", the real port when :0 was asked for). */
  follow(view: () => FollowedView, changed: (listener: () => void) => void, hooksUrl?: string): void {
    this.followed = true;
    if (hooksUrl) this.hooksBase = hooksUrl.replace(/\/hooks$/, '');
    clearInterval(this.waitForState);
    this.watches.unwatchAll('status');
    const next = () => {
      if (this.closed) return;
      this.enqueue(() => this.syncFromView(view()));
      changed(next);
    };
    next();
  }

  private async syncFromView(items: FollowedView): Promise<void> {
    for (const { task, status } of items) {
      if (this.seenStatus.get(task.key) === status) continue;
      this.seenStatus.set(task.key, status);
      if (this.specs && !this.specs.tasks.has(task.key)) this.specs.tasks.set(task.key, task);
      this.setRow(this.row(task, status));
    }
  }

  /** All reads of state run one after another, in the order their events came: a slow read of an older
   * write can never land after a newer one (the stale fleet page of issue 31). */
  private enqueue(job: () => Promise<void>): void {
    this.work = this.work.then(job).catch(() => undefined);
  }

  private requestReload(): void {
    if (this.reloadQueued) return;
    this.reloadQueued = true;
    this.enqueue(() => {
      this.reloadQueued = false;
      return this.reload();
    });
  }

  private row(task: SpecTask, status: AgentTaskStatus): TaskRow {
    const id = identityOfSpec(task);
    const trigger = triggerKeyOf(id);
    const pullRequest = trigger ? pullRequestOf(this.triggerStatuses.get(trigger), task.name) : undefined;
    const origin = originOf(task.namespace, task.labels, (key) => this.specs?.triggers?.get(key)?.spec);
    const row = taskRow(id, status, { pullRequest, origin, firstStartedAt: this.firstStarts.get(task.key) });
    this.firstStarts.seen(task, row.startedAt, status.episodes);
    return row;
  }

  private get statusRoot(): string {
    return statusDir(this.stateDir);
  }

  /** Everything read again: at start, and when a status appears for a task the specs did not have. */
  private async reload(): Promise<void> {
    const state = await readLocalState(this.dir, this.stateDir);
    const followedTasks = this.followed ? [...(this.specs?.tasks.values() ?? [])] : [];
    this.specs = state.specs;
    for (const task of followedTasks) if (!this.specs.tasks.has(task.key)) this.specs.tasks.set(task.key, task);
    this.watchTriggerRoot();
    this.triggerStatuses = await readTriggerStatuses(this.stateDir);
    // Following the controller, its statuses are newer than the files: only new tasks' rows come from here.
    for (const { task, status } of state.items)
      if (!this.followed || !this.rowsByKey.has(task.key)) this.setRow(this.row(task, status));
  }

  private setRow(row: TaskRow): void {
    if (sameRow(this.rowsByKey.get(row.key), row)) return;
    this.rowsByKey.set(row.key, row);
    this.followLogs(row);
    this.events.row(row);
  }

  // One watch per directory (util/dir-watch.ts, not chokidar: see there).
  private watchStatus(): void {
    this.watches.watch('status', this.statusRoot, (ns) => this.watchNamespace(ns));
    for (const ns of readdirSafe(this.statusRoot)) this.watchNamespace(ns);
    this.started = true;
  }

  /** Triggers' status files, for PR links: looked for at start and whenever everything is read again. */
  private watchTriggerRoot(): void {
    const triggers = triggerStatusDir(this.stateDir);
    this.watches.watch('triggers', triggers, (ns) => this.watchTriggers(ns));
    for (const ns of readdirSafe(triggers)) this.watchTriggers(ns);
  }

  private watchTriggers(ns: string): void {
    this.watches.watch(`triggers/${ns}`, join(triggerStatusDir(this.stateDir), ns), (file) => {
      if (file.endsWith('.json')) this.enqueue(() => this.triggerChanged(`${ns}/${file.slice(0, -'.json'.length)}`));
    });
  }

  /** A trigger wrote its status: the rows of its tasks change only when their PR links do. */
  private async triggerChanged(trigger: string): Promise<void> {
    const status = await readTriggerStatus(this.stateDir, trigger);
    if (status === undefined) return;
    const before = this.triggerStatuses.get(trigger);
    this.triggerStatuses.set(trigger, status);
    if (!pullRequestsChanged(before, status)) return;
    for (const row of this.rowsByKey.values()) {
      const pullRequest = triggerKeyOf(row) === trigger ? pullRequestOf(status, row.name) : row.pullRequest;
      if (pullRequest === row.pullRequest) continue;
      const next = { ...row, pullRequest };
      this.rowsByKey.set(row.key, next);
      this.events.row(next);
    }
  }

  private watchNamespace(ns: string): void {
    const dir = join(this.statusRoot, ns);
    if (ns.endsWith('.tmp') || this.watches.has(`status/${ns}`)) return;
    const changed = (file: string) => {
      if (file.endsWith('.json')) this.statusWritten(join(dir, file), ns, file.slice(0, -'.json'.length));
    };
    this.watches.watch(`status/${ns}`, dir, changed);
    // A namespace that appeared while running: what was written before its watcher started is read now.
    if (this.started) for (const file of readdirSafe(dir)) changed(file);
  }

  /** Logs are watched only for tasks with an episode running: those are the logs that grow. */
  private followLogs(row: TaskRow): void {
    const id = `logs/${row.key}`;
    if (row.runningEpisode === undefined) {
      this.watches.unwatch(id);
      return;
    }
    const dir = taskLogsDir(this.stateDir, row.namespace, row.name);
    this.watches.watch(id, dir, (file) => {
      const episode = episodeOfLogFile(file);
      if (episode !== undefined) this.logGrew(join(dir, file), row.key, episode);
    });
    // The first episode's log directory may come a moment after the status that says it runs.
    if (!this.watches.has(id) && !this.closed)
      setTimeout(() => {
        const now = this.rowsByKey.get(row.key);
        if (now) this.followLogs(now);
      }, 200).unref();
  }

  /** A status file was written: it is read again, after every read queued before it. */
  private statusWritten(path: string, namespace: string, name: string): void {
    const key = taskKey(namespace, name);
    if (this.followed || this.readQueued.has(key)) return;
    this.readQueued.add(key);
    this.enqueue(async () => {
      this.readQueued.delete(key);
      await this.statusChanged(path, key);
    });
  }

  private async statusChanged(path: string, key: string): Promise<void> {
    const task = this.specs?.tasks.get(key);
    if (!task) return this.reload();
    const record = await readStoredStatus(path);
    if (record) this.setRow(this.row(task, record.status));
  }

  private logGrew(path: string, key: string, episode: number): void {
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      return;
    }
    this.events.log(key, episode, size);
  }

  rows(): TaskRow[] {
    return [...this.rowsByKey.values()];
  }

  async detail(namespace: string, name: string): Promise<TaskDetail | undefined> {
    const key = taskKey(namespace, name);
    const task = this.specs?.tasks.get(key);
    if (!task) return undefined;
    const status =
      this.seenStatus.get(key) ??
      (await readStoredStatus(statusPath(this.stateDir, namespace, name)))?.status ??
      emptyStatus();
    const budgets = await this.budgets();
    const heldBy = budgets.filter((b) => b.status?.heldTasks.includes(name)).map((b) => `${b.namespace}/${b.name}`);
    return {
      row: this.row(task, status),
      status,
      episodes: await readEpisodes(this.stateDir, namespace, name),
      heldBy,
      gateLimits: gateLimitsOf(task.spec),
      hold: readHold(holdPath(this.stateDir, namespace, name)),
      specSuspend: task.spec?.suspend === true,
      children: childrenOf(this.rows(), namespace, name),
      ...(await localBoardAndMail(this.stateDir, namespace, name)),
    };
  }

  async triggers(): Promise<TriggerView[]> {
    const rows = this.rows();
    return [...(this.specs?.triggers?.values() ?? [])].map((t) =>
      triggerView(
        { ...t, spec: t.spec, status: this.triggerStatuses.get(t.key), problems: t.errors },
        rows,
        this.hooksBase,
      ),
    );
  }

  async budgets(): Promise<BudgetView[]> {
    return this.specs ? readBudgets(this.specs, this.stateDir) : [];
  }

  /** The log file rendered like a pod's (log-text.ts), followed while this episode runs. */
  async episodeLog(
    namespace: string,
    name: string,
    episode: number,
    signal: AbortSignal,
    req: LogRequest = {},
  ): Promise<EpisodeLog> {
    const key = taskKey(namespace, name);
    if (!this.specs?.tasks.has(key)) return { ok: false, status: 404, message: 'no such task' };
    return localEpisodeLog({
      ...req,
      file: episodeLogPath(this.stateDir, namespace, name, episode),
      running: () => this.rowsByKey.get(key)?.runningEpisode === episode,
      onChange: (changed) =>
        this.subscribe((event) => {
          if (event.type === 'log' ? event.key === key : event.rows.some((r) => r.key === key)) changed();
        }),
      signal,
    });
  }

  async resume(namespace: string, name: string, by: string, episodes?: number): Promise<ResumeOutcome> {
    const token = randomUUID();
    const outcome = requestLocalResume(this.stateDir, namespace, name, { token, by, episodes });
    if (outcome.ok) return { ok: true, token, note: this.waitsForRun() };
    return { ok: false, status: outcome.missing ? 404 : 409, message: outcome.message };
  }

  async setHold(namespace: string, name: string, hold: SuspendHold): Promise<ActionOutcome> {
    const known = this.specs?.tasks.has(taskKey(namespace, name)) ?? false;
    const outcome = setLocalHold(this.stateDir, { namespace, name, known }, hold);
    return outcome.ok ? { ok: true, note: this.waitsForRun() } : outcome;
  }

  /** The request is only a file in the state dir: with no controller holding its lock, nothing acts on it yet. */
  private waitsForRun(): string | undefined {
    if (lockHolder(this.stateDir) !== undefined) return undefined;
    return 'no episodic run is running on this state directory: takes effect when `episodic run` next runs on it';
  }

  subscribe(listener: (event: ConsoleEvent) => void): () => void {
    return this.events.subscribe(listener);
  }

  async close(): Promise<void> {
    clearInterval(this.waitForState);
    this.events.close();
    this.closed = true;
    this.firstStarts.stop();
    this.watches.close();
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function sameRow(a: TaskRow | undefined, b: TaskRow): boolean {
  return a !== undefined && JSON.stringify(a) === JSON.stringify(b);
}
