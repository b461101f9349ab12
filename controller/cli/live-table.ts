// The live view on a terminal: one row per task, redrawn in place twice a second.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { clip } from '../api/bounds.ts';
import { effectiveSpec } from '../api/steps.ts';
import { countedEpisodes } from '../reconciler/steps.ts';
import type { SpecTask } from '../sources/local/spec-files.ts';
import { printable } from '../util/printable.ts';
import { formatElapsed } from './elapsed.ts';
import { hookLines, TRIGGER_COLUMNS, triggerRows } from './live-triggers.ts';
import type { TriggerLine } from './live-triggers.ts';

export type TaskView = Array<{ task: SpecTask; status: AgentTaskStatus }>;

const COLUMNS = [
  'TASK',
  'PHASE',
  'EPISODE',
  'STEP',
  'RETRIES',
  'RUNNING',
  'PROGRESS',
  'COST',
  'LAST OUTCOME',
  'NEXT RETRY',
  'REASON',
];

export { formatElapsed } from './elapsed.ts';

/** STEP ("2/3 implement") only when a task is a pipeline, as in `episodic get`. */
function hasSteps(view: TaskView): boolean {
  return view.some(({ task, status }) => task.spec?.steps || status.step);
}

/** The header of the table: COLUMNS, without STEP unless a task has steps. */
export function columnsFor(view: TaskView): string[] {
  return hasSteps(view) ? COLUMNS : COLUMNS.filter((c) => c !== 'STEP');
}

/**
 * Episodes counted against the cap (retries never are) over the cap, granted episodes included: in a pipeline
 * the current step's, against the step's maxEpisodes (the reconciler's own count).
 */
function episodeCell(task: SpecTask, status: AgentTaskStatus): string {
  const { counted, granted } = countedEpisodes(status);
  const cap = task.spec ? effectiveSpec(task.spec, status).limits.maxEpisodes + granted : '?';
  return `${counted}/${cap}`;
}

export function renderRows(view: TaskView, now = Date.now()): string[][] {
  const piped = hasSteps(view);
  return view.map(({ task, status }) => [
    task.namespace === 'default' ? task.name : `${task.namespace}/${task.name}`,
    status.phase ?? 'Pending',
    episodeCell(task, status),
    ...(piped ? [status.step?.summary ?? '-'] : []),
    String(status.retries),
    status.currentEpisode ? formatElapsed(now - Date.parse(status.currentEpisode.startedAt)) : '-',
    task.spec?.progress.checklist ? (status.progress?.summary ?? '-') : '-',
    `$${status.costUSD.toFixed(4)}`,
    status.lastEpisode?.outcome ?? '-',
    status.nextEpisodeAt ? `in ${Math.max(0, Math.round((Date.parse(status.nextEpisodeAt) - now) / 1000))}s` : '-',
    status.reason ?? '-',
  ]);
}

/** The line under the table: what a person watching wants at a glance. */
export function renderTotals(view: TaskView): string {
  const cost = view.reduce((sum, { status }) => sum + status.costUSD, 0);
  const running = view.filter(({ status }) => status.currentEpisode).length;
  return `${view.length} task${view.length === 1 ? '' : 's'}, ${running} running, total cost $${cost.toFixed(4)}`;
}

export function formatTable(header: string[], rowsIn: string[][]): string {
  // Cells carry names and messages from specs and agents: escaped and bounded before they reach the terminal.
  const rows = rowsIn.map((r) => r.map((c) => printable(c ?? '', 300)));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('   ');
  return [line(header), ...rows.map(line)].join('\n');
}

/** Beside the tasks: the run's triggers (as recorded when drawn) and where webhook deliveries go. */
export interface TriggerPanel {
  triggers: TriggerLine[];
  watching: boolean;
  hooksUrl?: string;
}

export function renderView(view: TaskView, now = Date.now()): string[] {
  return [...formatTable(columnsFor(view), renderRows(view, now)).split('\n'), renderTotals(view)];
}

/** The trigger table and hook URLs under the tasks; none without triggers. */
export function renderTriggers(panel: TriggerPanel | undefined, now = Date.now()): string[] {
  if (!panel || panel.triggers.length === 0) return [];
  const rows = triggerRows(panel.triggers, panel.watching, now);
  return ['', ...formatTable(TRIGGER_COLUMNS, rows).split('\n'), ...hookLines(panel.triggers, panel.hooksUrl)];
}

/** The tasks fitted to what the triggers leave of the screen, then the triggers. */
export function renderScreen(
  view: TaskView,
  panel: TriggerPanel | undefined,
  screen: Screen,
  now = Date.now(),
): string[] {
  const triggers = renderTriggers(panel, now);
  const rows = screen.rows ? Math.max(4, screen.rows - triggers.length) : undefined;
  const tasks = fitToScreen(renderView(view, now), screen.columns, rows);
  return [...tasks, ...fitToScreen(triggers, screen.columns)];
}

/** Lines that fit the screen: each cut to one row (a wrapped line would break the count of lines to redraw). */
export function fitToScreen(lines: string[], columns?: number, rows?: number): string[] {
  // Cursor-up stops at the top row: a table taller than the screen would leave a copy behind on every redraw.
  const shown = rows && lines.length >= rows ? Math.max(1, rows - 3) : lines.length;
  const kept =
    shown === lines.length
      ? lines
      : [
          ...lines.slice(0, shown),
          `… ${lines.length - 1 - shown} more tasks (episodic get shows all)`,
          lines.at(-1) ?? '',
        ];
  return columns ? kept.map((l) => (l.length < columns ? l : `${l.slice(0, Math.max(0, columns - 2))}…`)) : kept;
}

/** The terminal's width: stdout's when it is one, else $COLUMNS when set; undefined for a pipe or a file. */
export function terminalColumns(): number | undefined {
  return process.stdout.columns || Number(process.env.COLUMNS) || undefined;
}

/** The last column cut so each row fits `columns` (the widths of the others are known only after escaping). */
export function fitLastColumn(header: string[], rows: string[][], columns: number | undefined): string[][] {
  if (!columns) return rows;
  const escaped = rows.map((r) => r.map((c) => printable(c ?? '', 300)));
  const last = header.length - 1;
  const widths = header.slice(0, last).map((h, i) => Math.max(h.length, ...escaped.map((r) => (r[i] ?? '').length)));
  const room = Math.max(header[last].length, columns - 1 - widths.reduce((sum, w) => sum + w + 3, 0));
  return escaped.map((r) => r.map((c, i) => (i === last ? clip(c, room) : c)));
}

/** Where the table is drawn: a terminal (process.stdout), or a stand-in of the same shape. */
export interface Screen {
  write(text: string): unknown;
  columns?: number;
  rows?: number;
}

export class LiveTable {
  private readonly timer: NodeJS.Timeout;
  private lines = 0;
  private readonly source: () => TaskView;
  private readonly screen: Screen;
  private readonly panel: () => TriggerPanel | undefined;

  constructor(
    source: () => TaskView,
    screen: Screen = process.stdout,
    panel: () => TriggerPanel | undefined = () => undefined,
  ) {
    this.source = source;
    this.screen = screen;
    this.panel = panel;
    this.timer = setInterval(() => this.draw(), 500);
    this.timer.unref();
    this.draw();
  }

  /** The final view, and for each task that did not succeed, why (its message), one line each. */
  static print(view: TaskView, screen: Screen = process.stdout, panel?: TriggerPanel): void {
    const why = view
      .filter(({ status }) => status.phase !== 'Succeeded' && status.message)
      .map(({ task, status }) => `${task.name}: ${printable(status.message ?? '')}`);
    const lines = [...renderView(view), ...why, ...renderTriggers(panel)];
    screen.write(`${fitToScreen(lines, screen.columns).join('\n')}\n`);
  }

  stop(): void {
    clearInterval(this.timer);
    this.clear();
  }

  /**
   * Overwrites the previous drawing line by line, then erases what is left below it. Never an erase from the
   * top-left corner: tmux (scroll-on-clear) keeps a copy of a screen cleared that way in its scrollback.
   */
  private draw(): void {
    const lines = renderScreen(this.source(), this.panel(), this.screen);
    const up = this.lines > 0 ? `\r\x1b[${this.lines}A` : '';
    this.screen.write(`${up}${lines.map((l) => `${l}\x1b[K\n`).join('')}\x1b[J`);
    this.lines = lines.length;
  }

  /** Erases the drawing one line at a time and leaves the cursor where it began. */
  private clear(): void {
    if (this.lines === 0) return;
    this.screen.write(`\r\x1b[${this.lines}A${'\x1b[2K\n'.repeat(this.lines)}\x1b[${this.lines}A`);
    this.lines = 0;
  }
}
