// Suspend holds locally: `episodic suspend`/`unsuspend` and the console write STATE/suspend/NAMESPACE/NAME.json
// atomically, beside the resume requests (resume-requests.ts); the controller polls the directory. A lifted
// hold stays as `{"suspended": false, "by": …}` so the audit trail can say who lifted it. Spec files are
// never touched.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseHold } from '../../api/hold.ts';
import type { SuspendHold } from '../../api/hold.ts';
import { StateFilePoller } from './state-file-poller.ts';

const MAX_BYTES = 4096;

export function holdDir(stateDir: string): string {
  return join(stateDir, 'suspend');
}

export function holdPath(stateDir: string, namespace: string, name: string): string {
  return join(holdDir(stateDir), namespace, `${name}.json`);
}

/** Writes the hold atomically: a reader sees the old file or the new one, never half of one. */
export function writeHold(stateDir: string, namespace: string, name: string, hold: SuspendHold): string {
  const path = holdPath(stateDir, namespace, name);
  mkdirSync(join(holdDir(stateDir), namespace), { recursive: true });
  const tmp = `${path}.${randomUUID()}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ ...hold, at: new Date().toISOString() })}\n`, { mode: 0o644 });
  renameSync(tmp, path);
  return path;
}

/** Reads one hold file; a file that is not one is reported by `onError` and yields nothing. */
export function readHold(path: string, onError: (message: string) => void = () => {}): SuspendHold | undefined {
  let raw: unknown;
  try {
    if (statSync(path).size > MAX_BYTES) throw new Error(`larger than ${MAX_BYTES} bytes`);
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      onError(`${path}: not a suspend hold: ${(err as Error).message}`);
    return undefined;
  }
  const r = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const hold = parseHold(r.suspended, r.by);
  if (!hold) onError(`${path}: not a suspend hold: expected {"suspended": true|false, "by": "…"}`);
  return hold;
}

export type LocalHoldOutcome = { ok: true; path: string } | { ok: false; status: number; message: string };

/** What `episodic suspend`/`unsuspend` and the console do locally: a hold for a task the specs define. */
export function setLocalHold(
  stateDir: string,
  task: { namespace: string; name: string; known: boolean },
  hold: SuspendHold,
): LocalHoldOutcome {
  if (!task.known) return { ok: false, status: 404, message: `no task ${task.namespace}/${task.name} in the specs` };
  return { ok: true, path: writeHold(stateDir, task.namespace, task.name, hold) };
}

export class HoldPoller extends StateFilePoller<SuspendHold> {
  constructor(
    stateDir: string,
    onChange: (key: string, hold: SuspendHold | undefined) => void,
    onError: (message: string) => void,
  ) {
    super(holdDir(stateDir), readHold, onChange, onError);
  }
}
