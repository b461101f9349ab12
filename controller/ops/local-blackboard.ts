// The blackboard locally: STATE/blackboard/NAMESPACE.json, replaced atomically (write, then rename) so a
// kill -9 leaves the old board or the new one, its applied-marker always with its entries.
import { readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../util/atomic-write.ts';
import { blackboardPath } from '../util/state-layout.ts';
import type { Blackboard } from './blackboard.ts';

export function readLocalBlackboard(stateDir: string, namespace: string): Blackboard {
  try {
    const parsed = JSON.parse(readFileSync(blackboardPath(stateDir, namespace), 'utf8')) as Partial<Blackboard>;
    return { entries: parsed.entries ?? {}, applied: parsed.applied ?? {} };
  } catch {
    return { entries: {}, applied: {} };
  }
}

/** Synchronous on purpose: two tasks' passes never interleave a read and a write of one board. */
export function writeLocalBlackboard(stateDir: string, namespace: string, board: Blackboard): void {
  writeFileAtomicSync(blackboardPath(stateDir, namespace), `${JSON.stringify(board, null, 2)}\n`, { mode: 0o600 });
}

/** Read, change, write in one synchronous step. */
export function updateLocalBlackboard<R>(
  stateDir: string,
  namespace: string,
  change: (board: Blackboard) => { board: Blackboard; value: R } | undefined,
): R | undefined {
  const changed = change(readLocalBlackboard(stateDir, namespace));
  if (!changed) return undefined;
  writeLocalBlackboard(stateDir, namespace, changed.board);
  return changed.value;
}
