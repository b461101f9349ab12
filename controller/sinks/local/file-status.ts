// Actual state for local mode: one JSON file per task under STATE/status/NAMESPACE/NAME.json, written
// atomically (temp file + fsync + rename + directory fsync) so a kill -9 leaves the old or the new
// version, never half of one.
import { clip, LINE_MAX } from '../../api/bounds.ts';
import { closeSync, existsSync, fsync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { removeQuietly } from '../../util/fs.ts';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { AgentTaskStatusSchema } from '../../api/agent-task.ts';
import { describeIssues } from '../../api/validate.ts';
import { StoreFullError } from '../../core/ports.ts';
import { statusDir, statusPath } from '../../util/state-layout.ts';

export const StoredStatusSchema = z.object({
  namespace: z.string(),
  name: z.string(),
  /** Local stand-in for metadata.generation: bumped whenever the spec hash changes. */
  generation: z.number().int().min(1),
  specHash: z.string(),
  status: AgentTaskStatusSchema,
});
export type StoredStatus = z.infer<typeof StoredStatusSchema>;

export class FileStatusStore {
  readonly root: string;

  private readonly stateDir: string;

  constructor(stateDir: string) {
    this.stateDir = stateDir;
    this.root = statusDir(stateDir);
  }

  pathFor(namespace: string, name: string): string {
    return statusPath(this.stateDir, namespace, name);
  }

  /** `durable: false` for what a restart recomputes or a power loss makes moot (see writeFileAtomic). */
  async write(record: StoredStatus, opts: WriteOptions = {}): Promise<void> {
    await writeFileAtomic(this.pathFor(record.namespace, record.name), `${JSON.stringify(record, null, 2)}\n`, opts);
  }

  /** Every stored status; unreadable files are reported, not fatal (and never deleted: nothing recorded is lost). */
  async readAll(): Promise<{
    records: StoredStatus[];
    errors: string[];
    unreadable: Array<{ key: string; message: string }>;
  }> {
    const records: StoredStatus[] = [];
    const errors: string[] = [];
    const unreadable: Array<{ key: string; message: string }> = [];
    let namespaces: string[] = [];
    try {
      namespaces = await readdir(this.root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records, errors, unreadable };
      throw err;
    }
    for (const ns of namespaces) {
      const names = await readdir(join(this.root, ns)).catch(() => [] as string[]);
      // Temp files of a writer that died mid-write: the lock says no writer is running now.
      for (const f of names) if (f.endsWith('.tmp')) removeQuietly(join(this.root, ns, f));
      const files = names.filter((f) => f.endsWith('.json'));
      for (const f of files) {
        const path = join(this.root, ns, f);
        try {
          records.push(StoredStatusSchema.parse(JSON.parse(await readFile(path, 'utf8'))));
        } catch (err) {
          const why =
            err instanceof z.ZodError ? describeIssues(err, '').join('; ') : (err as Error).message.split('\n')[0];
          const message = `${path}: unreadable status file (${clip(why, LINE_MAX)}); left in place`;
          errors.push(message);
          unreadable.push({ key: `${ns}/${f.slice(0, -'.json'.length)}`, message });
        }
      }
    }
    return { records, errors, unreadable };
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
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
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

// What "no room" looks like: a full disk, a quota, a file size limit (RLIMIT_FSIZE).
const FULL = {
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large for a file size limit',
} as Record<string, string>;

/** A StoreFullError naming the state directory when `err` says the disk has no room; else undefined. */
export function storeFullError(err: unknown, stateDir: string): StoreFullError | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (err instanceof StoreFullError) return err;
  if (typeof code !== 'string' || !(code in FULL)) return undefined;
  return new StoreFullError(`the state disk is full: cannot write to ${stateDir} (${code}: ${FULL[code]})`);
}
