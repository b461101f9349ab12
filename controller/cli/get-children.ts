// `episodic get NAME`: the tasks NAME created (spawned children, a forEach step's items) under its row, so a
// fan-out's progress is read where its parent is.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { OWNER_LABELS } from '../api/spawn-fields.ts';
import { formatTable } from './live-table.ts';

interface Item {
  task: { name: string; namespace: string; labels?: Readonly<Record<string, string>> };
  status: AgentTaskStatus;
}

/** The children's table of `parent`, in name order (numbers in order: each-2 before each-10); '' without any. */
export function childrenTable(parent: Item['task'], items: readonly Item[]): string {
  const mine = items
    .filter(({ task }) => task.namespace === parent.namespace && task.labels?.[OWNER_LABELS.AgentTask] === parent.name)
    .sort((a, b) => a.task.name.localeCompare(b.task.name, undefined, { numeric: true }));
  if (mine.length === 0) return '';
  const rows = mine.map(({ task, status }) => [
    task.name,
    status.phase ?? 'Pending',
    String(status.episodes),
    `$${status.costUSD.toFixed(4)}`,
    status.reason ?? '',
  ]);
  return `Children (${mine.length}):\n${formatTable(['NAME', 'PHASE', 'EPISODES', 'COST', 'REASON'], rows)}`;
}
