// Local mode's OpsApplier: set/del go to the namespace's blackboard file; other ops are handed to the
// handlers registered for them (spawn and send come with their feature), else rejected.
import type { Op } from '../api/ops.ts';
import type { AppliedOps, DesiredTask, OpsApplier } from '../core/ports.ts';
import { applyToBoard, isBlackboardOp } from './blackboard.ts';
import { updateLocalBlackboard } from './local-blackboard.ts';

export type OpHandler<T extends DesiredTask> = (task: T, episode: number, ops: readonly Op[]) => Promise<AppliedOps>;

export class LocalOpsApplier<T extends DesiredTask> implements OpsApplier<T> {
  private readonly stateDir: string;
  private readonly handlers: Partial<Record<Op['op'], OpHandler<T>>>;

  constructor(stateDir: string, handlers: Partial<Record<Op['op'], OpHandler<T>>> = {}) {
    this.stateDir = stateDir;
    this.handlers = handlers;
  }

  async apply(task: T, episode: number, ops: readonly Op[]): Promise<AppliedOps> {
    const rejected: AppliedOps['rejected'] = [];
    const board = ops.filter(isBlackboardOp);
    if (board.length > 0) {
      const refused = updateLocalBlackboard(this.stateDir, task.namespace, (b) => {
        const applied = applyToBoard(b, task.name, episode, board);
        return applied && { board: applied.board, value: applied.rejected };
      });
      rejected.push(...(refused ?? []));
    }
    return { rejected: [...rejected, ...(await applyByHandlers(this.handlers, task, episode, ops))] };
  }
}

/** Each other kind of op through its handler, in the order they came; no handler: rejected. */
export async function applyByHandlers<T extends DesiredTask>(
  handlers: Partial<Record<Op['op'], OpHandler<T>>>,
  task: T,
  episode: number,
  ops: readonly Op[],
): Promise<AppliedOps['rejected']> {
  const rejected: AppliedOps['rejected'] = [];
  const kinds = [...new Set(ops.filter((o) => !isBlackboardOp(o)).map((o) => o.op))];
  for (const kind of kinds) {
    const handler = handlers[kind];
    const mine = ops.filter((o) => o.op === kind);
    if (handler) rejected.push(...(await handler(task, episode, mine)).rejected);
    else rejected.push(...mine.map((o) => ({ op: o.op, message: `${o.op}: not supported by this controller yet` })));
  }
  return rejected;
}
