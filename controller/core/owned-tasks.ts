// Deleting a task deletes what it owns: the tasks it spawned (recursively, since each child is released the
// same way) and its mailbox. A TaskSource wrapper, so both modes' loops get it by composition: release()
// is called once a deleting task has nothing running, and deleting children there is idempotent.
import type { CreatedTasks } from './created-tasks.ts';
import type { Mailboxes } from './mailboxes.ts';
import type { DesiredTask, TaskSource } from './ports.ts';

export function deletingOwnedTasks<T extends DesiredTask>(
  source: TaskSource<T>,
  owned: { created: CreatedTasks; mailboxes?: Mailboxes },
): TaskSource<T> {
  return {
    get: (key) => source.get(key),
    list: () => source.list(),
    subscribe: (onChange) => source.subscribe(onChange),
    hold: (task) => source.hold(task),
    release: async (task) => {
      // Throws to retry the pass (the API may be down); the task is let go only once its children are.
      await owned.created.deleteByOwner({ kind: 'AgentTask', namespace: task.namespace, name: task.name });
      await owned.mailboxes?.drop(task.namespace, task.name);
      await source.release(task);
    },
  };
}
