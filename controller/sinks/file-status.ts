// Actual state for local mode: one JSON file per task under STATE/status/NAMESPACE/NAME.json, written
// atomically (temp file + fsync + rename + directory fsync) so a kill -9 leaves the old or the new
// version, never half of one.
import { mkdir, open, readFile, readdir, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { AgentTaskStatusSchema } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';

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

  constructor(stateDir: string) {
    this.root = join(stateDir, 'status');
  }

  pathFor(namespace: string, name: string): string {
    return join(this.root, namespace, `${name}.json`);
  }

  async write(record: StoredStatus): Promise<void> {
    await writeFileAtomic(this.pathFor(record.namespace, record.name), `${JSON.stringify(record, null, 2)}\n`);
  }

  /** Every stored status; unreadable files are reported, not fatal (and never deleted: nothing recorded is lost). */
  async readAll(): Promise<{ records: StoredStatus[]; errors: string[] }> {
    const records: StoredStatus[] = [];
    const errors: string[] = [];
    let namespaces: string[] = [];
    try {
      namespaces = await readdir(this.root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records, errors };
      throw err;
    }
    for (const ns of namespaces) {
      const files = (await readdir(join(this.root, ns)).catch(() => [] as string[])).filter((f) => f.endsWith('.json'));
      for (const f of files) {
        const path = join(this.root, ns, f);
        try {
          records.push(StoredStatusSchema.parse(JSON.parse(await readFile(path, 'utf8'))));
        } catch (err) {
          errors.push(`${path}: unreadable status file (${(err as Error).message.split('\n')[0]}); left in place`);
        }
      }
    }
    return { records, errors };
  }
}

export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const handle = await open(tmp, 'w', 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  // The rename itself must survive a crash too: fsync the directory entry.
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}

export function statusOf(record: StoredStatus | undefined): AgentTaskStatus | undefined {
  return record?.status;
}
