// `episodic get NAME`: where a task stands in its merge queue (issue 32 §3), under its row, from
// status.integrate: the queue, the last result, its position, rebases and resolution episodes, the pull request
// it merged through the forge (or tried to), and what failed: conflicts, a gate, the forge's refusal.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { printable } from '../util/printable.ts';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The queue's lines for one task; [] for a task that never entered a queue. Agent and gate text made printable. */
export function integrateLines(status: AgentTaskStatus): string[] {
  const q = status.integrate;
  if (!q) return [];
  const where =
    q.result === 'queued' && q.position !== undefined ? ` (${plural(q.position, 'task')} ahead when it entered)` : '';
  const commit = q.result === 'integrated' && q.commit ? ` at ${q.commit.slice(0, 12)}` : '';
  const pull = q.pullRequest !== undefined ? ` (pull request #${q.pullRequest})` : '';
  const lines = [
    `Merge queue ${q.queue}: ${q.result}${where}${commit}${pull}; ${plural(q.attempts, 'rebase')}, ${plural(q.episodes, 'resolution episode')}`,
  ];
  if (q.conflicts?.length) lines.push(`  conflicts: ${q.conflicts.map((f) => printable(f)).join(', ')}`);
  if (q.gate) lines.push(`  gate failed: ${printable(q.gate)}`);
  // Redacted and bounded when written (api/integrate.ts); printable() still keeps it one terminal line.
  if (q.forge) lines.push(`  forge refused: ${printable(q.forge)}`);
  return lines;
}
