// Cluster mode's OpsApplier: set/del go to the namespace's ConfigMap episodic-blackboard; other ops to the
// handlers registered for them (spawn and send come with their feature), else rejected.
import type { Op } from '../api/ops.ts';
import type { AppliedOps, DesiredTask, OpsApplier } from '../core/ports.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { applyToBoard, isBlackboardOp } from './blackboard.ts';
import { updateClusterBlackboard } from './cluster-blackboard.ts';
import { applyByHandlers } from './local-ops.ts';
import type { OpHandler } from './local-ops.ts';

export class ClusterOpsApplier<T extends DesiredTask> implements OpsApplier<T> {
  private readonly client: KubeClient;
  private readonly handlers: Partial<Record<Op['op'], OpHandler<T>>>;

  constructor(client: KubeClient, handlers: Partial<Record<Op['op'], OpHandler<T>>> = {}) {
    this.client = client;
    this.handlers = handlers;
  }

  async apply(task: T, episode: number, ops: readonly Op[]): Promise<AppliedOps> {
    const board = ops.filter(isBlackboardOp);
    const refused =
      board.length > 0
        ? await updateClusterBlackboard(this.client, task.namespace, (b) => {
            const applied = applyToBoard(b, task.name, episode, board);
            return applied && { board: applied.board, value: applied.rejected };
          })
        : [];
    return { rejected: [...(refused ?? []), ...(await applyByHandlers(this.handlers, task, episode, ops))] };
  }
}
