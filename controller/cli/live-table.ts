// The live view on a terminal: one row per task, redrawn in place twice a second.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import type { SpecTask } from '../sources/local/spec-files.ts';
import { printable } from '../util/printable.ts';

export type TaskView = Array<{ task: SpecTask; status: AgentTaskStatus }>;

const COLUMNS = ['TASK', 'PHASE', 'EPISODE', 'COST', 'LAST OUTCOME', 'NEXT RETRY', 'REASON'];

export function renderRows(view: TaskView, now = Date.now()): string[][] {
  return view.map(({ task, status }) => [
    task.namespace === 'default' ? task.name : `${task.namespace}/${task.name}`,
    status.phase ?? 'Pending',
    `${status.currentEpisode?.number ?? status.episodes}/${task.spec?.limits.maxEpisodes ?? '?'}`,
    `$${status.costUSD.toFixed(4)}`,
    status.lastEpisode?.outcome ?? '-',
    status.nextEpisodeAt ? `in ${Math.max(0, Math.round((Date.parse(status.nextEpisodeAt) - now) / 1000))}s` : '-',
    status.reason ?? '-',
  ]);
}

export function formatTable(header: string[], rowsIn: string[][]): string {
  // Cells carry names and messages from specs and agents: escaped and bounded before they reach the terminal.
  const rows = rowsIn.map((r) => r.map((c) => printable(c ?? '', 300)));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('   ');
  return [line(header), ...rows.map(line)].join('\n');
}

export class LiveTable {
  private readonly timer: NodeJS.Timeout;
  private lines = 0;
  private readonly source: () => TaskView;

  constructor(source: () => TaskView) {
    this.source = source;
    this.timer = setInterval(() => this.draw(), 500);
    this.timer.unref();
    this.draw();
  }

  static print(view: TaskView): void {
    process.stdout.write(`${formatTable(COLUMNS, renderRows(view))}\n`);
  }

  stop(): void {
    clearInterval(this.timer);
    this.clear();
  }

  private draw(): void {
    const text = formatTable(COLUMNS, renderRows(this.source()));
    this.clear();
    process.stdout.write(`${text}\n`);
    this.lines = text.split('\n').length;
  }

  private clear(): void {
    if (this.lines > 0) process.stdout.write(`\x1b[${this.lines}A\x1b[0J`);
    this.lines = 0;
  }
}
