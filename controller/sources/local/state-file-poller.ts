// Follows a directory of per-task state files (DIR/NAMESPACE/NAME.json: resume requests, suspend holds) by
// polling: a handful of small files, no watcher to set up or leak. `onChange` gets a task key and what its
// file says whenever a file appears or changes.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { taskKey } from '../../api/agent-task.ts';

const MAX_FILES = 10_000;

export class StateFilePoller<T> {
  private readonly seen = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly dir: string;
  private readonly read: (path: string, onError: (message: string) => void) => T | undefined;
  private readonly onChange: (key: string, value: T | undefined) => void;
  private readonly onError: (message: string) => void;

  constructor(
    dir: string,
    read: (path: string, onError: (message: string) => void) => T | undefined,
    onChange: (key: string, value: T | undefined) => void,
    onError: (message: string) => void,
  ) {
    this.dir = dir;
    this.read = read;
    this.onChange = onChange;
    this.onError = onError;
  }

  /** One look at the directory: every new or changed file is announced. */
  scan(): void {
    let namespaces: string[];
    try {
      namespaces = readdirSync(this.dir);
    } catch {
      return; // no file yet
    }
    let files = 0;
    for (const namespace of namespaces) {
      let names: string[];
      try {
        names = readdirSync(join(this.dir, namespace)).filter((f) => f.endsWith('.json'));
      } catch {
        continue;
      }
      for (const file of names) {
        if (files++ >= MAX_FILES) return;
        const path = join(this.dir, namespace, file);
        let stamp: string;
        try {
          const st = statSync(path);
          stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
        } catch {
          continue;
        }
        const key = taskKey(namespace, file.slice(0, -'.json'.length));
        if (this.seen.get(key) === stamp) continue;
        this.seen.set(key, stamp);
        this.onChange(key, this.read(path, this.onError));
      }
    }
  }

  start(intervalMs: number): void {
    this.stop();
    this.timer = setInterval(() => this.scan(), intervalMs);
    this.timer.unref(); // never what keeps `episodic run` alive
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
