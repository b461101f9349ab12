// Local mailbox events: a watch (util/dir-watch.ts) on STATE/mailboxes, on each namespace directory in it and
// on each task's directory. A message file linked into a task's directory tells the subscribers the task's
// key; so does a task directory that appears, since its first message may be linked before its watch starts.
// Removals (acknowledgements, a dropped mailbox) are not news. A watch that cannot be set up (a read-only
// state dir, no inotify watches left) is left to the reconciler's slow resync.
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DirWatch } from '../../util/dir-watch.ts';
import { TASK_NAME } from '../../core/mailboxes.ts';
import type { MailboxEvents } from '../../core/mailboxes.ts';
import { mailboxesDir } from '../../util/state-layout.ts';

export class LocalMailboxWatch implements MailboxEvents {
  private readonly root: string;
  /** By "" (the root), "NAMESPACE" or "NAMESPACE/TASK". */
  private readonly watches = new DirWatch();
  private readonly listeners: Array<(key: string) => void> = [];
  private running = false;

  constructor(stateDir: string) {
    this.root = mailboxesDir(stateDir);
  }

  subscribe(onArrival: (key: string) => void): void {
    this.listeners.push(onArrival);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.watches.reopen();
    try {
      mkdirSync(this.root, { recursive: true });
    } catch {
      return; // a read-only state dir: nobody can send here either; the resync still reads
    }
    this.rewatch(this.root, '', (ns) => this.namespaceSeen(ns));
    for (const ns of listing(this.root)) this.namespaceSeen(ns);
  }

  stop(): void {
    this.running = false;
    this.watches.close();
  }

  private namespaceSeen(ns: string): void {
    if (!TASK_NAME.test(ns)) return;
    const dir = join(this.root, ns);
    this.rewatch(dir, ns, (task) => this.taskSeen(ns, task));
    for (const task of listing(dir)) this.taskSeen(ns, task);
  }

  private taskSeen(ns: string, task: string): void {
    if (!TASK_NAME.test(task)) return;
    const key = `${ns}/${task}`;
    const dir = join(this.root, ns, task);
    const arrived = (file: string) => {
      if (file.endsWith('.json') && existsSync(join(dir, file))) this.emit(key);
    };
    this.rewatch(dir, key, arrived);
    if (existsSync(dir)) this.emit(key);
  }

  /** (Re)starts the watch of dir: a directory removed and made again is a new inode, its old watch is dead. */
  private rewatch(dir: string, id: string, onName: (name: string) => void): void {
    if (this.running && existsSync(dir)) this.watches.watch(id, dir, onName, true);
    else this.watches.unwatch(id);
  }

  private emit(key: string): void {
    for (const listener of this.listeners) listener(key);
  }
}

function listing(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
