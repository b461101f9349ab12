// Actual state for local mode: one JSON file per task under STATE/status/NAMESPACE/NAME.json, written
// atomically (temp file + fsync + rename + directory fsync) so a kill -9 leaves the old or the new
// version, never half of one.
import { clip, LINE_MAX } from '../../api/bounds.ts';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import type { WriteOptions } from '../../util/atomic-write.ts';
import { removeQuietly } from '../../util/fs.ts';
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
