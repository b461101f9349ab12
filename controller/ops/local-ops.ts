// Local mode's OpsApplier: the blackboard is the namespace's JSON file (ops-applier.ts does the rest).
import type { DesiredTask } from '../core/ports.ts';
import { updateLocalBlackboard } from './local-blackboard.ts';
import { BoardAndHandlersApplier } from './ops-applier.ts';
import type { OpHandlers } from './ops-applier.ts';

export class LocalOpsApplier<T extends DesiredTask> extends BoardAndHandlersApplier<T> {
  constructor(stateDir: string, handlers: OpHandlers<T> = {}) {
    super(async (namespace, change) => updateLocalBlackboard(stateDir, namespace, change), handlers);
  }
}
