// The OpsApplier both modes use: set/del go to the namespace's blackboard in one read-change-write of the
// mode's store (with the per-task marker that makes a second application a no-op), every other kind of op
// to the handler registered for it (spawn, send), in the order they came; an op with no handler is rejected.
import { isBlackboardOp } from '../api/ops.ts';
import type { Op } from '../api/ops.ts';
import type { AppliedOps, DesiredTask, OpsApplier } from '../core/ports.ts';
import type { Blackboard } from './blackboard.ts';
import { applyToBoard } from './blackboard.ts';

export type OpHandler<T extends DesiredTask> = (task: T, episode: number, ops: readonly Op[]) => Promise<AppliedOps>;
export type OpHandlers<T extends DesiredTask> = Partial<Record<Op['op'], OpHandler<T>>>;

/** A mode's blackboard: read, change and write back as one step; undefined when `change` changes nothing. */
export type BoardUpdate = <R>(
  namespace: string,
  change: (board: Blackboard) => { board: Blackboard; value: R } | undefined,
) => Promise<R | undefined>;

export class BoardAndHandlersApplier<T extends DesiredTask> implements OpsApplier<T> {
  private readonly update: BoardUpdate;
  private readonly handlers: OpHandlers<T>;

  constructor(update: BoardUpdate, handlers: OpHandlers<T> = {}) {
    this.update = update;
    this.handlers = handlers;
  }

  async apply(task: T, episode: number, ops: readonly Op[]): Promise<AppliedOps> {
    const at = placesOf(ops, isBlackboardOp);
    const board = at.map((i) => ops[i]).filter(isBlackboardOp);
    const refused =
      board.length > 0
        ? await this.update(task.namespace, (b) => {
            const applied = applyToBoard(b, task.name, episode, board);
            return applied && { board: applied.board, value: applied.rejected };
          })
        : [];
    const onBoard = (refused ?? []).map((r) => ({ ...r, index: at[r.index] ?? r.index }));
    const others = await applyByHandlers(this.handlers, task, episode, ops);
    return { rejected: [...onBoard, ...others].sort((a, b) => a.index - b.index) };
  }
}

/** Each other kind of op through its handler, in the order they came; no handler: rejected. */
export async function applyByHandlers<T extends DesiredTask>(
  handlers: OpHandlers<T>,
  task: T,
  episode: number,
  ops: readonly Op[],
): Promise<AppliedOps['rejected']> {
  const rejected: AppliedOps['rejected'] = [];
  const kinds = [...new Set(ops.filter((o) => !isBlackboardOp(o)).map((o) => o.op))];
  for (const kind of kinds) {
    const handler = handlers[kind];
    const at = placesOf(ops, (o) => o.op === kind);
    const mine = at.map((i) => ops[i] as Op);
    // A handler numbers its rejections among the ops it was given; the applier's caller, among all of them.
    const refused = handler
      ? (await handler(task, episode, mine)).rejected
      : mine.map((o, index) => ({ index, op: o.op, message: `${o.op}: not supported by this controller yet` }));
    rejected.push(...refused.map((r) => ({ ...r, index: at[r.index] ?? r.index })));
  }
  return rejected.sort((a, b) => a.index - b.index);
}

/** The places in `ops` of the ops that `pick` picks. */
function placesOf(ops: readonly Op[], pick: (op: Op) => boolean): number[] {
  return ops.flatMap((o, i) => (pick(o) ? [i] : []));
}
