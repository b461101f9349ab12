// The local state as `episodic get` and the console read it: the spec directory's tasks joined with their
// stored status (STATE/status), each task's episode records and the AgentBudgets' recorded windows.
// Read-only: unlike FileStatusStore.readAll (the controller's start-up), it never removes a writer's temp files.
import { open, readdir, readFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { emptyStatus, taskKey } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { AgentBudgetStatusSchema } from '../api/agent-budget.ts';
import type { AgentBudgetStatus } from '../api/agent-budget.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import { readRecords } from '../sinks/local/episode-records.ts';
import { budgetPath, episodesPath, statusDir } from '../util/state-layout.ts';
import { StoredStatusSchema } from '../sinks/local/file-status.ts';
import type { StoredStatus } from '../sinks/local/file-status.ts';
import type { LoadedSpecs, SpecTask } from '../sources/local/spec-files.ts';
import { loadSpecDir } from '../sources/local/spec-files.ts';
import { withCreatedTasks } from '../sources/local/created-tasks.ts';

export interface LocalTaskItem {
  task: SpecTask;
  status: AgentTaskStatus;
  generation: number;
}

export interface LocalState {
  items: LocalTaskItem[];
  specErrors: string[];
  specs: LoadedSpecs;
}

/** Spec tasks with their recorded status (Pending when none yet), in spec-file order. */
export async function readLocalState(dir: string, stateDir: string): Promise<LocalState> {
  const specs = withCreatedTasks(await loadSpecDir(dir), stateDir);
  const statuses = new Map((await readStoredStatuses(stateDir)).map((r) => [taskKey(r.namespace, r.name), r]));
  const items = [...specs.tasks.values()].map((task) => {
    const record = statuses.get(task.key);
    return { task, status: record?.status ?? emptyStatus(), generation: record?.generation ?? 1 };
  });
  return { items, specErrors: specs.errors, specs };
}

/** Every readable status file under STATE/status; a file mid-rename or unreadable is skipped. */
export async function readStoredStatuses(stateDir: string): Promise<StoredStatus[]> {
  const root = statusDir(stateDir);
  const out: StoredStatus[] = [];
  for (const ns of await readdir(root).catch(() => [] as string[])) {
    for (const file of await readdir(join(root, ns)).catch(() => [] as string[])) {
      if (!file.endsWith('.json')) continue;
      const record = await readStoredStatus(join(root, ns, file));
      if (record) out.push(record);
    }
  }
  return out;
}

export async function readStoredStatus(path: string): Promise<StoredStatus | undefined> {
  try {
    return StoredStatusSchema.parse(JSON.parse(await readFile(path, 'utf8')));
  } catch {
    return undefined;
  }
}

/** The first episode's start, from the first line of its records (the status keeps only the last one). */
export async function firstEpisodeStart(
  stateDir: string,
  namespace: string,
  name: string,
): Promise<string | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(episodesPath(stateDir, namespace, name), 'r');
    const buf = Buffer.alloc(FIRST_LINE_MAX);
    const { bytesRead } = await handle.read(buf, 0, FIRST_LINE_MAX, 0);
    const line = buf.subarray(0, bytesRead).toString('utf8').split('\n', 1)[0] ?? '';
    const started = (JSON.parse(line) as { startedAt?: unknown }).startedAt;
    return typeof started === 'string' ? started.slice(0, 64) : undefined;
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

// A record line is a few KB at most (its strings are bounded): the first one fits in this.
const FIRST_LINE_MAX = 64 * 1024;

export function readEpisodes(stateDir: string, namespace: string, name: string): Promise<EpisodeRecord[]> {
  return readRecords(episodesPath(stateDir, namespace, name));
}

export interface LocalBudgetView {
  namespace: string;
  name: string;
  limitUSD?: number;
  window?: string;
  status?: AgentBudgetStatus;
}

/** The spec directory's AgentBudgets with their recorded status (STATE/budgets/NAMESPACE/NAME.json). */
export async function readBudgets(specs: LoadedSpecs, stateDir: string): Promise<LocalBudgetView[]> {
  const out: LocalBudgetView[] = [];
  for (const b of specs.budgets.values()) {
    const path = budgetPath(stateDir, b.namespace, b.name);
    const raw = await readFile(path, 'utf8').catch(() => undefined);
    let status: AgentBudgetStatus | undefined;
    try {
      status = raw === undefined ? undefined : AgentBudgetStatusSchema.parse(JSON.parse(raw).status);
    } catch {
      status = undefined;
    }
    out.push({ namespace: b.namespace, name: b.name, limitUSD: b.spec?.limitUSD, window: b.spec?.window, status });
  }
  return out;
}
