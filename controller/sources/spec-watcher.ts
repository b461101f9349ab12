// Follows a spec directory with chokidar: re-parses only the file that changed, then hands the merged
// view to the controller. Writes that land in bursts (editors, git checkout) are coalesced.
import { readFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { watch } from 'chokidar';
import type { FSWatcher } from 'chokidar';
import { isSpecFileName, mergeParsed, parseSpecText } from './spec-files.ts';
import type { LoadedSpecs, ParsedFile } from './spec-files.ts';

// mtimes come from the kernel's coarse clock (a tick behind) and some filesystems round them to 1 s.
const MTIME_MARGIN_MS = 1000;

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
  /** When the seeding load began: files changed since then may differ from what it read. */
  private loadedAt = 0;

  constructor(opts: SpecWatcherOptions) {
    this.opts = opts;
  }

  /**
   * Seeds the per-file cache from an initial load (begun at `loadStartedAt`, epoch ms), so the first event
   * does not re-read everything.
   */
  seed(initial: LoadedSpecs, loadStartedAt: number): void {
    initial.files.forEach((f, i) => this.parsed.set(f, initial.parsed[i]));
    this.loadedAt = loadStartedAt;
  }

  async start(): Promise<void> {
    const root = resolve(this.opts.dir);
    this.watcher = watch(root, {
      depth: 0,
      alwaysStat: true,
      // Only top-level YAML files matter; never descend into workspaces or the state dir.
      ignored: (path: string, stats?: { isFile(): boolean; isDirectory(): boolean }) =>
        path !== root && (stats?.isDirectory() === true || (stats?.isFile() === true && !isSpecFileName(basename(path)))),
      awaitWriteFinish: { stabilityThreshold: 50, pollInterval: 20 },
    });
    const touch = (path: string) => {
      if (!isSpecFileName(basename(path))) return;
      this.pending.add(path);
      clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.flush(), this.opts.debounceMs ?? 100);
    };
    // The initial scan reports every file. Edits made between the seeding load and the end of this scan
    // would otherwise be missed: re-read files modified since the load began (with a margin for coarse
    // mtimes), and forget seeded files the scan did not find.
    let scanning = true;
    const seen = new Set<string>();
    this.watcher.on('add', (path: string, stats?: { mtimeMs: number }) => {
      if (!scanning) return touch(path);
      seen.add(path);
      if (!this.parsed.has(path) || (stats?.mtimeMs ?? Infinity) >= this.loadedAt - MTIME_MARGIN_MS) touch(path);
    });
    this.watcher.on('change', touch).on('unlink', touch);
    this.watcher.on('error', (err) => this.opts.onError?.(err));
    await new Promise<void>((ready) => this.watcher?.once('ready', () => ready()));
    scanning = false;
    for (const path of this.parsed.keys()) if (!seen.has(path)) touch(path);
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
        this.parsed.set(path, parseSpecText(path, await readFile(path, 'utf8')));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') this.parsed.delete(path);
        else this.opts.onError?.(err);
      }
    }
    const files = [...this.parsed.keys()].sort();
    this.opts.onChange(mergeParsed(files, files.map((f) => this.parsed.get(f) as ParsedFile)));
  }
}
