// An episode's ops in the pod's 4 KiB termination message: they get OPS_TERMINATION_BUDGET bytes of JSON
// (ops and rejections together). Ops are kept in order while they fit; the rest are rejected with one
// message that says how many and from which op on, and the episode's other results stay intact.
import type { EpisodeResult } from './episode-result.ts';
import type { Op, RejectedOp } from './ops.ts';

/** Rejections carried at most (the last one may be the budget's own). */
const REJECTED_CARRIED_MAX = 3;

export function fitOpsToBudget(result: EpisodeResult, budgetBytes: number): EpisodeResult {
  if (!result.ops && !result.opsRejected) return result;
  const rejected = carriedRejections(result.opsRejected ?? []);
  const ops = result.ops ?? [];
  let kept = ops.length;
  const size = (n: number, extra: RejectedOp[]) =>
    bytes({ ops: ops.slice(0, n), opsRejected: [...rejected, ...extra] });
  const note = (n: number): RejectedOp[] =>
    n < ops.length ? [{ line: 0, message: overBudget(ops.length - n, n + 1, budgetBytes) }] : [];
  while (kept > 0 && size(kept, note(kept)) > budgetBytes) kept--;
  return withFitted(result, ops.slice(0, kept), [...rejected, ...note(kept)]);
}

/** The first rejections, and one that counts the rest. */
function carriedRejections(all: RejectedOp[]): RejectedOp[] {
  if (all.length <= REJECTED_CARRIED_MAX) return all;
  const kept = all.slice(0, REJECTED_CARRIED_MAX - 1);
  return [...kept, { line: 0, message: `${all.length - kept.length} more lines rejected` }];
}

/** The result without ops: every op rejected with `why`. */
export function withoutOps(result: EpisodeResult, why?: string): EpisodeResult {
  const count = result.ops?.length ?? 0;
  const message = why ?? `${count} ops did not fit the 4 KiB termination message; none applied`;
  const { ops: _ops, opsRejected: _rejected, ...rest } = result;
  return { ...rest, opsRejected: [{ line: 0, message }] };
}

function withFitted(result: EpisodeResult, ops: Op[], rejected: RejectedOp[]): EpisodeResult {
  const { ops: _ops, opsRejected: _rejected, ...rest } = result;
  return { ...rest, ...(ops.length > 0 ? { ops } : {}), ...(rejected.length > 0 ? { opsRejected: rejected } : {}) };
}

function overBudget(count: number, from: number, budgetBytes: number): string {
  return `${count} ops from op ${from} on did not fit the termination message (${budgetBytes} bytes for ops); not applied`;
}

function bytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}
