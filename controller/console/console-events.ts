// What a console source tells the open pages: changed rows, coalesced so a burst of status writes is one
// event, and log growth, passed on at once. One home for both sources (local files, cluster informers).
import type { ConsoleEvent, TaskRow } from './views.ts';

// Changes within this window go out as one event: 100 status writes a second make 10 events, not 100.
const COALESCE_MS = 100;

export class ConsoleEvents {
  private readonly listeners = new Set<(event: ConsoleEvent) => void>();
  private readonly pending = new Map<string, TaskRow>();
  private flushTimer: NodeJS.Timeout | undefined;
  private closed = false;

  /** A row changed: sent with the others of this window, its newest version only. */
  row(row: TaskRow): void {
    if (this.closed) return;
    this.pending.set(row.key, row);
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      const rows = [...this.pending.values()];
      this.pending.clear();
      this.emit({ type: 'tasks', rows });
    }, COALESCE_MS);
  }

  /** An episode's log grew to `size` bytes: its followers read on now. */
  log(key: string, episode: number, size: number): void {
    this.emit({ type: 'log', key, episode, size });
  }

  subscribe(listener: (event: ConsoleEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.flushTimer);
  }

  private emit(event: ConsoleEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}
