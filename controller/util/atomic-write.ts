// The one way a state file is written whole or not at all: a private temp file beside it, then a rename
// (replace) or a hard link (create once). Every temp name is unique, so two writers of one file never share
// a temp file (a fixed `FILE.tmp` let one writer rename the other's half-written file into place).
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsync,
  linkSync,
  mkdirSync,
  openSync,
  renameSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { removeQuietly } from './fs.ts';

/** A fresh temp name beside `path`: hidden (listings of `*.json` never see it), ending `.tmp` (swept at start). */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);
}

export interface SyncWriteOptions {
  mode?: number;
  /** fsync the data before the rename: a power loss then leaves the old file or the new, never an empty one. */
  flush?: boolean;
}

/** Replaces `path` (its directory made if missing) synchronously: for a read-change-write that must not interleave. */
export function writeFileAtomicSync(path: string, data: string, opts: SyncWriteOptions = {}): void {
  const tmp = tempPathFor(path);
  const write = () => writeFileSync(tmp, data, { mode: opts.mode ?? 0o644, flush: opts.flush ?? false });
  try {
    write();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(dirname(path), { recursive: true });
    write();
  }
  try {
    renameSync(tmp, path);
  } catch (err) {
    removeQuietly(tmp);
    throw err;
  }
}

/**
 * Creates `path` with `data` unless it exists (a hard link of a finished temp file fails on an existing name):
 * a reader sees the whole file or none, and of two racing creators exactly one wins.
 */
export function createFileOnce(path: string, data: string, mode = 0o644): 'created' | 'exists' {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = tempPathFor(path);
  writeFileSync(tmp, data, { mode, flush: true });
  try {
    linkSync(tmp, path);
    return 'created';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return 'exists';
  } finally {
    removeQuietly(tmp);
  }
}

export interface WriteOptions {
  durable?: boolean;
  /**
   * Called once the new version is in place (renamed over the old, its data fsynced), before the directory
   * fsync: from then on any process, e.g. a restarted controller, reads it. Only a power loss could still
   * lose the rename, and it would take down whatever `onVisible` started as well.
   */
  onVisible?: () => void;
}

/**
 * Writes `path` as a whole or not at all: temp file + rename. `durable` fsyncs the file before the rename
 * and the directory after it, so the write itself survives a power loss. Without it the file is still
 * fsynced when it replaces an existing one (else a power loss could leave an empty file where the old,
 * recorded one was); only the rename may then be lost, which leaves the old version.
 * Small writes are synchronous (cheaper than a trip through the thread pool); only the fsyncs go there.
 */
export async function writeFileAtomic(path: string, data: string, opts: WriteOptions = {}): Promise<void> {
  const durable = opts.durable ?? true;
  const dir = dirname(path);
  const tmp = tempPathFor(path);
  let fd: number;
  try {
    fd = openSync(tmp, 'w', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(dir, { recursive: true });
    fd = openSync(tmp, 'w', 0o644);
  }
  try {
    writeSync(fd, data);
    if (durable || existsSync(path)) await fsyncAsync(fd);
  } catch (err) {
    closeSync(fd);
    removeQuietly(tmp);
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (err) {
    removeQuietly(tmp);
    throw err;
  }
  opts.onVisible?.();
  // The rename itself must survive a power loss too: fsync the directory entry.
  if (durable) await syncDirectory(dir);
}

const fsyncAsync = promisify(fsync);
const dirSyncs = new Map<string, { running: Promise<void>; next?: Promise<void> }>();

/**
 * fsync a directory; callers that arrive while one runs share the next one (group commit): it starts after
 * their rename, so it covers them, and a burst of status writes costs two directory fsyncs, not one each.
 */
function syncDirectory(dir: string): Promise<void> {
  const state = dirSyncs.get(dir);
  if (state) {
    state.next ??= state.running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        state.running = state.next as Promise<void>;
        state.next = undefined;
        return fsyncDir(dir);
      });
    return state.next;
  }
  const running = fsyncDir(dir).finally(() => {
    const s = dirSyncs.get(dir);
    if (s && s.running === running && !s.next) dirSyncs.delete(dir);
  });
  dirSyncs.set(dir, { running });
  return running;
}

async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await fsyncAsync(fd);
  } finally {
    closeSync(fd);
  }
}
