// Each local task's start (its first episode's), for the fleet's Started and Duration columns. The status says
// it only while one episode has run; past that it is read once from the first line of the task's records, off
// the status chain (a start never changes, so it cannot race a status read) and a few at a time.
import type { SpecTask } from '../sources/local/spec-files.ts';
import { firstEpisodeStart } from './local-state.ts';

// First lines read at once: a start-up of 10,000 tasks stays gentle.
const BATCH = 32;

export class FirstStarts {
  private readonly known = new Map<string, string>();
  private readonly asked = new Set<string>();
  private readonly wanted: SpecTask[] = [];
  private stopped = false;
  private readonly stateDir: string;
  private readonly found: (key: string, startedAt: string) => void;

  constructor(stateDir: string, found: (key: string, startedAt: string) => void) {
    this.stateDir = stateDir;
    this.found = found;
  }

  get(key: string): string | undefined {
    return this.known.get(key);
  }

  /** The row's start, as the status gave it (kept), or none yet: read from the records when episodes ran. */
  seen(task: SpecTask, startedAt: string | undefined, episodes: number): void {
    if (startedAt) this.known.set(task.key, startedAt);
    else if (episodes > 1 && !this.asked.has(task.key)) {
      this.asked.add(task.key);
      this.wanted.push(task);
      if (this.wanted.length === 1) setImmediate(() => void this.drain());
    }
  }

  stop(): void {
    this.stopped = true;
  }

  private async drain(): Promise<void> {
    while (this.wanted.length > 0 && !this.stopped) {
      const batch = this.wanted.splice(0, BATCH);
      const starts = await Promise.all(batch.map((t) => firstEpisodeStart(this.stateDir, t.namespace, t.name)));
      batch.forEach((task, i) => {
        const started = starts[i];
        if (!started || this.stopped) return;
        this.known.set(task.key, started);
        this.found(task.key, started);
      });
    }
  }
}
