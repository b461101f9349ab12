// The loop's view of dependsOn: which tasks depend on which (so a dependency's change wakes its dependents),
// and the facts reconcile() judges them by — each dependency's recorded state, a cycle through the task, and
// the outputs an episode starts with. Read through the ports; nothing here decides.
import { taskKey } from '../api/agent-task.ts';
import { cycleThrough, dependencyFact } from '../reconciler/dependencies.ts';
import type { DependencyFact } from '../reconciler/dependencies.ts';
import type { DesiredTask, StatusSink, TaskSource, UpstreamOutputs } from './ports.ts';

export class DependencyGraph<T extends DesiredTask> {
  private readonly source: TaskSource<T>;
  private readonly sink: StatusSink<T>;
  /** Task key → keys of the tasks that dependOn it. */
  private readonly dependents = new Map<string, Set<string>>();

  constructor(source: TaskSource<T>, sink: StatusSink<T>) {
    this.source = source;
    this.sink = sink;
  }

  /** The task's dependsOn as it is now (`old`: as it was when last indexed). */
  index(task: T, old: T | undefined): void {
    if (old) this.unindex(old);
    for (const dep of task.dependsOn) {
      const depKey = taskKey(task.namespace, dep);
      let set = this.dependents.get(depKey);
      if (!set) this.dependents.set(depKey, (set = new Set()));
      set.add(task.key);
    }
  }

  /** The task left its source: it depends on nothing any more. */
  unindex(old: T): void {
    for (const dep of old.dependsOn) this.dependents.get(taskKey(old.namespace, dep))?.delete(old.key);
  }

  dependentsOf(key: string): Iterable<string> {
    return this.dependents.get(key) ?? [];
  }

  /** Each dependsOn entry as recorded now, and a cycle through the task if there is one. */
  facts(task: DesiredTask): { dependencies: Record<string, DependencyFact | undefined>; dependencyCycle?: string[] } {
    const dependencies: Record<string, DependencyFact | undefined> = {};
    if (task.dependsOn.length === 0) return { dependencies };
    for (const dep of task.dependsOn) {
      const depTask = this.source.get(taskKey(task.namespace, dep));
      dependencies[dep] = depTask ? dependencyFact(this.sink.read(depTask)) : undefined;
    }
    const dependencyCycle = cycleThrough(
      task.name,
      (name) => this.source.get(taskKey(task.namespace, name))?.dependsOn,
    );
    return { dependencies, dependencyCycle };
  }

  /** The outputs of each task in dependsOn, as their statuses have them when the episode starts. */
  upstreamOutputs(task: DesiredTask): UpstreamOutputs {
    const outputs: UpstreamOutputs = {};
    for (const dep of task.dependsOn) {
      const depTask = this.source.get(taskKey(task.namespace, dep));
      outputs[dep] = depTask ? this.sink.read(depTask)?.outputs : undefined;
    }
    return outputs;
  }
}
