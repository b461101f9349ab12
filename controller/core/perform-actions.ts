// A pass's actions carried out in the order reconcile() listed them, once the status that calls for them is
// on record: ops applied, events, created children, a best-of-N adoption, a stop, a start. Nothing is decided
// here; what a later pass must know of it goes to the loop's memory.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { clip, EVENT_MESSAGE_MAX } from '../api/bounds.ts';
import { spawnParentAsWritten } from '../reconciler/credentials-choice.ts';
import type { Action } from '../reconciler/reconcile.ts';
import type { ControllerOptions } from './controller-options.ts';
import type { DependencyGraph } from './dependency-graph.ts';
import type { LoopMemory } from './loop-memory.ts';
import { applyOpsThenRecord, opsFollow } from './ops-loop.ts';
import type { DesiredTask } from './ports.ts';

export interface PerformDeps<T extends DesiredTask> {
  opts: ControllerOptions<T>;
  memory: LoopMemory;
  graph: DependencyGraph<T>;
}

/** The pass's other actions (records and the release are the loop's own steps), one after the other. */
export async function performActions<T extends DesiredTask>(
  deps: PerformDeps<T>,
  task: T,
  status: AgentTaskStatus,
  actions: readonly Action[],
): Promise<void> {
  const { opts, memory } = deps;
  const { executor } = opts;
  let startDetails: Record<string, unknown> = {};
  // An episode whose ops this pass applies is recorded after them, with those refused (ops-loop.ts).
  const held = actions.find((a) => a.type === 'RecordEpisode' && opsFollow(actions, a.record.number));
  for (const a of actions) {
    if (a.type === 'RecordEpisode' || a.type === 'ReleaseTask') {
      // recorded before the status (recordEpisodes), or held for its ops; a release is the pass's last step
    } else if (a.type === 'ApplyOps') {
      const record = held?.type === 'RecordEpisode' ? held.record : undefined;
      const parent = spawnParentAsWritten(task, a.credentialsDefault);
      const refused = await applyOpsThenRecord({ ...opts, applier: opts.ops }, parent, a, record);
      memory.opsApplied.set(task.key, { episode: a.episode, refused });
    } else if (a.type === 'RecordEvent') {
      const details = a.afterStart ? { ...a.details, ...startDetails } : (a.details ?? {});
      opts.sink.event(task, a.eventType, a.reason, a.message, details);
    } else if (a.type === 'CreateTasks') {
      await createTasks(opts, task, a.tasks);
    } else if (a.type === 'AdoptWinner') {
      if (executor.adoptWinner) memory.adopted.set(task.key, await executor.adoptWinner(task, a));
    } else if (a.type === 'StopEpisode') {
      memory.stops.set(task.key, { number: a.number, reason: a.reason });
      await executor.stop(task, a.number, a.reason);
    } else {
      memory.pendingStarts.set(task.key, a.number);
      startDetails = await executor.start(task, a.number, status, deps.graph.upstreamOutputs(task), a.leash);
      memory.pendingStarts.delete(task.key);
    }
  }
}

/** A forEach step's children, through the one created-tasks mechanism; a name another task has is said. */
async function createTasks<T extends DesiredTask>(
  opts: ControllerOptions<T>,
  task: T,
  tasks: Extract<Action, { type: 'CreateTasks' }>['tasks'],
): Promise<void> {
  const refused = (await opts.spawn?.createTasks(task, tasks)) ?? tasks.map((t) => `${t.name}: not supported`);
  if (refused.length > 0)
    opts.sink.event(task, 'Warning', 'ChildrenRefused', clip(refused.join('; '), EVENT_MESSAGE_MAX), {});
}
