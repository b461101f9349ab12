// Follows a directory of per-task state files (DIR/NAMESPACE/NAME.json: resume requests, suspend holds): a
// watch on DIR and on each namespace directory in it (util/dir-watch.ts) reads a file as it is renamed in, so
// `episodic resume` or a console click is seen at once. A slow resync finds what a lost event missed; while a
// watch cannot be set up it looks every half second instead. `onChange` gets a task key and what its file
// says whenever a file appears or changes.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { taskKey } from '../../api/agent-task.ts';
import { DirWatch } from '../../util/dir-watch.ts';

const MAX_FILES = 10_000;
/** The safety net for a lost event (an inotify queue overflow): a few readdirs a minute. */
export const STATE_FILE_RESYNC_MS = 60_000;
/** Without a watch (no inotify watch left): a person at a terminal finds half a second prompt. */
export const STATE_FILE_POLL_MS = 500;

/** Tests: other intervals, e.g. a resync too slow to be what found a file. */
export interface StateFileWatchTiming {
  resyncMs?: number;
  pollMs?: number;
}

export class StateFileWatch<T> {
  private readonly seen = new Map<string, string>();
  private readonly dir: string;
  private readonly read: (path: string, onError: (message: string) => void) => T | undefined;
  private readonly onChange: (key: string, value: T | undefined) => void;
  private readonly onError: (message: string) => void;
  private readonly watches = new DirWatch(() => this.unwatched());
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** A watch could not start or was lost: the resync polls. */
  private polling = false;
  private readonly timing: Required<StateFileWatchTiming>;

  constructor(
    dir: string,
    read: (path: string, onError: (message: string) => void) => T | undefined,
    onChange: (key: string, value: T | undefined) => void,
    onError: (message: string) => void,
    timing: StateFileWatchTiming = {},
  ) {
    this.timing = { resyncMs: STATE_FILE_RESYNC_MS, pollMs: STATE_FILE_POLL_MS, ...timing };
    this.dir = dir;
    this.read = read;
    this.onChange = onChange;
    this.onError = onError;
  }

  /** One look at the directory: every new or changed file is announced. */
  scan(): void {
    let files = 0;
    for (const namespace of listing(this.dir)) {
      if (this.running) this.watchNamespace(namespace, false);
      for (const file of listing(join(this.dir, namespace))) {
        if (!file.endsWith('.json')) continue;
        if (files++ >= MAX_FILES) return;
        this.look(namespace, file);
      }
    }
  }

  /** Watches from now on (what is there already is read), with the resync behind. */
  start(): void {
    this.stop();
    this.running = true;
    this.watches.reopen();
    try {
      mkdirSync(this.dir, { recursive: true });
    } catch {
      // a read-only state dir: nobody can write a request here either; the resync still reads
    }
    if (!this.watches.watch('', this.dir, (namespace) => this.namespaceSeen(namespace), true)) this.polling = true;
    this.scan();
    this.schedule();
  }

  /** Whether it fell back to looking every pollMs (a watch could not be set up or was lost). */
  get polls(): boolean {
    return this.polling;
  }

  stop(): void {
    this.running = false;
    this.watches.close();
    clearInterval(this.timer);
    this.timer = undefined;
    this.polling = false;
  }

  private namespaceSeen(namespace: string): void {
    if (namespace.startsWith('.')) return;
    this.watchNamespace(namespace, true);
    for (const file of listing(join(this.dir, namespace))) if (file.endsWith('.json')) this.look(namespace, file);
  }

  /** `again` when the root saw the name: a namespace directory removed and made again is a new inode. */
  private watchNamespace(namespace: string, again: boolean): void {
    const dir = join(this.dir, namespace);
    const onFile = (file: string) => file.endsWith('.json') && this.look(namespace, file);
    if (!this.watches.watch(namespace, dir, onFile, again) && existsSync(dir)) this.unwatched();
  }

  private look(namespace: string, file: string): void {
    const path = join(this.dir, namespace, file);
    let stamp: string;
    try {
      const st = statSync(path);
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      return; // renamed away meanwhile
    }
    const key = taskKey(namespace, file.slice(0, -'.json'.length));
    if (this.seen.get(key) === stamp) return;
    this.seen.set(key, stamp);
    this.onChange(key, this.read(path, this.onError));
  }

  private unwatched(): void {
    if (this.polling || !this.running) return;
    this.polling = true;
    this.schedule();
  }

  private schedule(): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => this.scan(), this.polling ? this.timing.pollMs : this.timing.resyncMs);
    this.timer.unref(); // never what keeps `episodic run` alive
  }
}

function listing(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
