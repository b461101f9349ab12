// The one way to watch directories: fs.watch (one inotify watch a directory, not recursive) under an id, for
// the mailboxes, resume requests, suspend holds and the console's status files and logs. Not chokidar: it
// re-reads a directory's listing on every rename into it (~40% of a core at 10,000 status files, bench/console).
// A watch that cannot be set up (no directory yet, no inotify watch left, a file system without inotify) or
// that fails later is dropped: what it would have reported is left to the caller's resync.
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';

export class DirWatch {
  private readonly watchers = new Map<string, FSWatcher>();
  private closed = false;
  private readonly onLost: ((id: string) => void) | undefined;

  /** `onLost`: a watch that started failed later (its directory removed, the inotify queue overflowed). */
  constructor(onLost?: (id: string) => void) {
    this.onLost = onLost;
  }

  /**
   * Watches `dir` under `id`: `onName` gets the name of each entry created, renamed in or changed. `again`:
   * a watch already under `id` is replaced (a directory removed and made again is a new inode, its old
   * watch is dead); otherwise it stays. Whether `id` is watched now.
   */
  watch(id: string, dir: string, onName: (name: string) => void, again = false): boolean {
    if (this.closed) return false;
    if (this.watchers.has(id) && !again) return true;
    this.unwatch(id);
    try {
      const watcher = watch(dir, { persistent: false }, (_event, name) => name && onName(name.toString()));
      watcher.on('error', () => {
        watcher.close();
        if (this.watchers.get(id) !== watcher) return;
        this.watchers.delete(id);
        this.onLost?.(id);
      });
      this.watchers.set(id, watcher);
      return true;
    } catch {
      return false; // not there (yet), or no inotify watch left: the caller's resync reads it
    }
  }

  has(id: string): boolean {
    return this.watchers.has(id);
  }

  unwatch(id: string): void {
    this.watchers.get(id)?.close();
    this.watchers.delete(id);
  }

  /** Every watch whose id starts with `prefix` goes. */
  unwatchAll(prefix = ''): void {
    for (const id of [...this.watchers.keys()]) if (id.startsWith(prefix)) this.unwatch(id);
  }

  /** No more watches, now or later. */
  close(): void {
    this.closed = true;
    this.unwatchAll();
  }

  /** Watches may start again after a close (a restarted watch). */
  reopen(): void {
    this.closed = false;
  }
}
