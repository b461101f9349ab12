// One per-task state file (DIR/NAMESPACE/NAME.json: resume requests, suspend holds), written atomically
// and read with a size cap; state-file-watch.ts follows the directory.
import { readFileSync, statSync } from 'node:fs';
import { writeFileAtomicSync } from '../../util/atomic-write.ts';

// A state file is a few fields: anything larger is not one of ours.
const MAX_BYTES = 4096;

/** Writes `body` atomically (temp file, rename): a reader sees the old file or the new one, never half of one. */
export function writeStateFile(path: string, body: object): string {
  writeFileAtomicSync(path, `${JSON.stringify(body)}\n`);
  return path;
}

/** Parses one state file; a missing file yields nothing, an unreadable one is reported as "not a `what`". */
export function readStateFile(path: string, what: string, onError: (message: string) => void): unknown {
  try {
    if (statSync(path).size > MAX_BYTES) throw new Error(`larger than ${MAX_BYTES} bytes`);
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') onError(`${path}: not a ${what}: ${(err as Error).message}`);
    return undefined;
  }
}
