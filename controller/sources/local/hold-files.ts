// Suspend holds locally: `episodic suspend`/`unsuspend` and the console write STATE/suspend/NAMESPACE/NAME.json
// atomically, beside the resume requests (resume-requests.ts); the controller watches the directory. A lifted
// hold stays as `{"suspended": false, "by": …}` so the audit trail can say who lifted it. Spec files are
// never touched.
import { parseHold } from '../../api/hold.ts';
import type { SuspendHold } from '../../api/hold.ts';
import { StateFileWatch } from './state-file-watch.ts';
import type { StateFileWatchTiming } from './state-file-watch.ts';
import { holdDir, holdPath } from '../../util/state-layout.ts';
import { readStateFile, writeStateFile } from './state-file.ts';

/** Writes the hold atomically: a reader sees the old file or the new one, never half of one. */
export function writeHold(stateDir: string, namespace: string, name: string, hold: SuspendHold): string {
  return writeStateFile(holdPath(stateDir, namespace, name), { ...hold, at: new Date().toISOString() });
}

/** Reads one hold file; a file that is not one is reported by `onError` and yields nothing. */
export function readHold(path: string, onError: (message: string) => void = () => {}): SuspendHold | undefined {
  const raw = readStateFile(path, 'suspend hold', onError);
  if (raw === undefined) return undefined;
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

export class HoldWatch extends StateFileWatch<SuspendHold> {
  constructor(
    stateDir: string,
    onChange: (key: string, hold: SuspendHold | undefined) => void,
    onError: (message: string) => void,
    timing?: StateFileWatchTiming,
  ) {
    super(holdDir(stateDir), readHold, onChange, onError, timing);
  }
}
