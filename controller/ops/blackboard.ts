// The namespace blackboard (issue 20): what `set`/`del` ops write and {{bb.KEY}} reads. Pure rules shared by
// both stores (locally a JSON file, on a cluster a ConfigMap): bounds, last writer wins, and the marker that
// makes a second application of one task's episode a no-op (exactly once across a kill -9).
import { BLACKBOARD_KEYS_MAX } from '../api/bounds.ts';
import type { BlackboardOp } from '../api/ops.ts';
import type { AppliedOps } from '../core/ports.ts';

export interface Blackboard {
  entries: Record<string, string>;
  /** Task name → the newest episode whose blackboard ops are in `entries`. */
  applied: Record<string, number>;
}

/** The board after one episode's set/del ops, in order; undefined when this episode's ops are already in. */
export function applyToBoard(
  board: Blackboard,
  task: string,
  episode: number,
  ops: readonly BlackboardOp[],
): { board: Blackboard; rejected: AppliedOps['rejected'] } | undefined {
  if ((board.applied[task] ?? 0) >= episode) return undefined;
  const entries = { ...board.entries };
  const rejected: AppliedOps['rejected'] = [];
  for (const [index, op] of ops.entries()) {
    if (op.op === 'del') delete entries[op.key];
    else if (!Object.hasOwn(entries, op.key) && Object.keys(entries).length >= BLACKBOARD_KEYS_MAX) {
      const message = `set ${op.key}: the blackboard holds ${BLACKBOARD_KEYS_MAX} keys already`;
      rejected.push({ index, op: 'set', message });
    } else entries[op.key] = op.value;
  }
  return { board: { entries, applied: { ...board.applied, [task]: episode } }, rejected };
}

/** {{bb.KEY}} placeholders of a board. */
export function blackboardVars(entries: Readonly<Record<string, string>>): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(entries)) vars[`bb.${k}`] = v;
  return vars;
}
