// Follows a spec directory with chokidar: re-parses only the file that changed, then hands the merged
// view to the controller. Writes that land in bursts (editors, git checkout) are coalesced.
import { readFile } from 'node:fs/promises';
import { readdirSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { watch } from 'chokidar';
import type { FSWatcher } from 'chokidar';
import { fileStamp, isSpecFileName, mergeParsed, parseSpecText, refusedSpecFile } from './spec-files.ts';
import type { LoadedSpecs, ParsedFile } from './spec-files.ts';

export interface SpecWatcherOptions {
  dir: string;
  onChange: (specs: LoadedSpecs) => void;
  onError?: (err: unknown) => void;
  debounceMs?: number;
}

export class SpecWatcher {
  private readonly parsed = new Map<string, ParsedFile>();
  private readonly opts: SpecWatcherOptions;
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
  private pending = new Set<string>();
  /** What each seeded file looked like when the initial load read it. */
  private stamps = new Map<string, string>();

  constructor(opts: SpecWatcherOptions) {
    this.opts = opts;
  }

  /** Seeds the per-file cache from an initial load, so the first event does not re-read everything. */
  seed(initial: LoadedSpecs): void {
    initial.files.forEach((f, i) => {
      this.parsed.set(f, initial.parsed[i]);
    });
    this.stamps = initial.stamps ?? new Map();
  }

  async start(): Promise<void> {
    const root = resolve(this.opts.dir);
    this.watcher = watch(root, {
      depth: 0,
      ignoreInitial: true,
      // Only top-level YAML files matter; never descend into workspaces or the state dir.
      ignored: (path: string, stats?: { isFile(): boolean; isDirectory(): boolean }) =>
        path !== root &&
        (stats?.isDirectory() === true || (stats?.isFile() === true && !isSpecFileName(basename(path)))),
      awaitWriteFinish: { stabilityThreshold: 50, pollInterval: 20 },
    });
    const touch = (path: string) => {
      if (!isSpecFileName(basename(path))) return;
      this.pending.add(path);
      clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.flush(), this.opts.debounceMs ?? 100);
    };
    this.watcher.on('add', touch).on('change', touch).on('unlink', touch);
    this.watcher.on('error', (err) => this.opts.onError?.(err));
    await new Promise<void>((ready) => this.watcher?.once('ready', () => ready()));
    // From here on every change raises an event. What changed between the seeding load and now (chokidar's
    // initial scan may have looked at a file before an edit and watched it only after) is found by comparing
    // the directory with what the load read.
    for (const path of this.changedSinceLoad(root)) touch(path);
  }

  private changedSinceLoad(root: string): string[] {
    const now = readdirSync(root)
      .filter(isSpecFileName)
      .map((name) => join(root, name));
    const changed = now.filter((path) => !this.parsed.has(path));
    for (const path of this.parsed.keys()) {
      try {
        if (this.stamps.get(path) !== fileStamp(statSync(path))) changed.push(path);
      } catch {
        changed.push(path); // gone (or unreadable): flush() finds out which
      }
    }
    return changed;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    await this.watcher?.close();
  }

  private async flush(): Promise<void> {
    const paths = [...this.pending];
    this.pending.clear();
    for (const path of paths) {
      try {
        // A symlink leading out of DIR is refused as the first load refuses it, never read.
        const refused = refusedSpecFile(path);
        if (refused) this.parsed.set(path, { tasks: [], errors: [refused], ignored: [] });
        else this.parsed.set(path, parseSpecText(path, await readFile(path, 'utf8')));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') this.parsed.delete(path);
        else this.opts.onError?.(err);
      }
    }
    const files = [...this.parsed.keys()].sort();
    this.opts.onChange(
      mergeParsed(
        files,
        files.map((f) => this.parsed.get(f) as ParsedFile),
      ),
    );
  }
}
