// The console's view of a local state dir: the rows of every task kept in memory, re-read one status file
// at a time as chokidar reports it changed, and log growth passed on, so an open page follows a run live.
import { existsSync, statSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { relative, sep } from 'node:path';
import type { FSWatcher } from 'chokidar';
import { emptyStatus, taskKey } from '../api/agent-task.ts';
import { episodeLogPath } from '../executors/local/episode-launcher.ts';
import { requestLocalResume } from '../sources/local/resume-requests.ts';
import type { LoadedSpecs } from '../sources/local/spec-files.ts';
import { readBudgets, readEpisodes, readLocalState, readStoredStatus, statusPath } from './local-state.ts';
import { identityOfSpec, taskRow } from './views.ts';
import type { BudgetView, ConsoleEvent, ConsoleSource, ResumeOutcome, TaskDetail, TaskRow } from './views.ts';

// Changes within this window go out as one event: 100 status writes a second make 10 events, not 100.
const COALESCE_MS = 100;

export class LocalConsoleSource implements ConsoleSource {
  private readonly dir: string;
  private readonly stateDir: string;
  private specs: LoadedSpecs | undefined;
  private readonly rowsByKey = new Map<string, TaskRow>();
  private readonly listeners = new Set<(event: ConsoleEvent) => void>();
  private readonly pending = new Map<string, TaskRow>();
  private flushTimer: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;
  private waitForState: NodeJS.Timeout | undefined;

  constructor(dir: string, stateDir: string) {
    this.dir = dir;
    this.stateDir = stateDir;
  }

  async start(): Promise<void> {
    await this.reload();
    if (existsSync(this.stateDir)) await this.watch();
    else {
      // Started before any run: the state dir appears with the first one.
      this.waitForState = setInterval(() => {
        if (!existsSync(this.stateDir)) return;
        clearInterval(this.waitForState);
        void this.reload().then(() => this.watch());
      }, 500);
      this.waitForState.unref();
    }
  }

  /** Everything read again: at start, and when a status appears for a task the specs did not have. */
  private async reload(): Promise<void> {
    const state = await readLocalState(this.dir, this.stateDir);
    this.specs = state.specs;
    const fresh = new Map(state.items.map(({ task, status }) => [task.key, taskRow(identityOfSpec(task), status)]));
    for (const [key, row] of fresh) if (!sameRow(this.rowsByKey.get(key), row)) this.queue(row);
    this.rowsByKey.clear();
    for (const [key, row] of fresh) this.rowsByKey.set(key, row);
  }

  private async watch(): Promise<void> {
    const { watch } = await import('chokidar');
    const watcher = watch(this.stateDir, {
      ignoreInitial: true,
      depth: 4,
      ignored: (path: string) => !this.watched(path),
    });
    watcher.on('add', (p) => this.changed(p)).on('change', (p) => this.changed(p));
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    this.watcher = watcher;
  }

  /** Status and log files (and the directories leading to them); not temp files, locks or kept deleted tasks. */
  private watched(path: string): boolean {
    const rel = relative(this.stateDir, path);
    if (rel === '') return true;
    const top = rel.split(sep)[0];
    return (top === 'status' || top === 'logs') && !rel.endsWith('.tmp');
  }

  private changed(path: string): void {
    const parts = relative(this.stateDir, path).split(sep);
    if (parts[0] === 'status' && parts.length === 3 && parts[2]?.endsWith('.json'))
      void this.statusChanged(path, parts[1] as string, (parts[2] as string).slice(0, -'.json'.length));
    const log = parts[0] === 'logs' && parts.length === 4 ? /^episode-(\d+)\.log$/.exec(parts[3] as string) : null;
    if (log) this.logGrew(path, taskKey(parts[1] as string, parts[2] as string), Number(log[1]));
  }

  private async statusChanged(path: string, namespace: string, name: string): Promise<void> {
    const key = taskKey(namespace, name);
    const task = this.specs?.tasks.get(key);
    if (!task) return this.reload();
    const record = await readStoredStatus(path);
    if (!record) return;
    const row = taskRow(identityOfSpec(task), record.status);
    if (sameRow(this.rowsByKey.get(key), row)) return;
    this.rowsByKey.set(key, row);
    this.queue(row);
  }

  private logGrew(path: string, key: string, episode: number): void {
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      return;
    }
    this.emit({ type: 'log', key, episode, size });
  }

  private queue(row: TaskRow): void {
    this.pending.set(row.key, row);
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      const rows = [...this.pending.values()];
      this.pending.clear();
      this.emit({ type: 'tasks', rows });
    }, COALESCE_MS);
  }

  private emit(event: ConsoleEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  rows(): TaskRow[] {
    return [...this.rowsByKey.values()];
  }

  async detail(namespace: string, name: string): Promise<TaskDetail | undefined> {
    const key = taskKey(namespace, name);
    const task = this.specs?.tasks.get(key);
    if (!task) return undefined;
    const record = await readStoredStatus(statusPath(this.stateDir, namespace, name));
    const status = record?.status ?? emptyStatus();
    const budgets = await this.budgets();
    const heldBy = budgets.filter((b) => b.status?.heldTasks.includes(name)).map((b) => `${b.namespace}/${b.name}`);
    return {
      row: taskRow(identityOfSpec(task), status),
      status,
      episodes: await readEpisodes(this.stateDir, namespace, name),
      heldBy,
    };
  }

  async budgets(): Promise<BudgetView[]> {
    return this.specs ? readBudgets(this.specs, this.stateDir) : [];
  }

  logFile(namespace: string, name: string, episode: number): string | undefined {
    if (!this.specs?.tasks.has(taskKey(namespace, name))) return undefined;
    return episodeLogPath(this.stateDir, namespace, name, episode);
  }

  async resume(namespace: string, name: string, by: string, episodes?: number): Promise<ResumeOutcome> {
    const token = randomUUID();
    const outcome = requestLocalResume(this.stateDir, namespace, name, { token, by, episodes });
    if (outcome.ok) return { ok: true, token };
    return { ok: false, status: outcome.missing ? 404 : 409, message: outcome.message };
  }

  subscribe(listener: (event: ConsoleEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    clearInterval(this.waitForState);
    clearTimeout(this.flushTimer);
    await this.watcher?.close();
  }
}

function sameRow(a: TaskRow | undefined, b: TaskRow): boolean {
  return a !== undefined && JSON.stringify(a) === JSON.stringify(b);
}
