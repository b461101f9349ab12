// Cluster mode's OpsApplier: the blackboard is the namespace's ConfigMap episodic-blackboard (ops-applier.ts
// does the rest).
import type { DesiredTask } from '../core/ports.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { updateClusterBlackboard } from './cluster-blackboard.ts';
import { BoardAndHandlersApplier } from './ops-applier.ts';
import type { OpHandlers } from './ops-applier.ts';

export class ClusterOpsApplier<T extends DesiredTask> extends BoardAndHandlersApplier<T> {
  constructor(client: KubeClient, handlers: OpHandlers<T> = {}) {
    super((namespace, change) => updateClusterBlackboard(client, namespace, change), handlers);
  }
}
