// Desired state locally: the AgentTasks of a spec directory, as loaded and then followed by the watcher.
// Generation, which a cluster's API server keeps, is counted here: one up for every new spec hash, from
// what was on record when the controller started (recall()).
import type { ResumeRequest } from '../../api/resume.ts';
import type { SuspendHold } from '../../api/hold.ts';
import type { SpecFileTask, TaskSource } from '../../core/ports.ts';
import { dependsOnAsWritten } from './spec-files.ts';
import type { LoadedSpecs, SpecTask } from './spec-files.ts';

export interface LocalTask extends SpecFileTask {
  /** What the spec file says, for `episodic run`'s view. */
  source: SpecTask;
}

export class SpecDirSource implements TaskSource<LocalTask> {
  private tasks = new Map<string, LocalTask>();
  private listeners: Array<(key: string) => void> = [];
  /** Resume requests from the state directory, by task key (resume-requests.ts). */
  private readonly requests = new Map<string, ResumeRequest>();
  /** Suspend holds from the state directory, by task key (hold-files.ts). */
  private readonly holds = new Map<string, SuspendHold>();
  /** The latest generation and spec hash of every task seen, removed ones included: a re-added task goes on counting. */
  private readonly generations = new Map<string, { generation: number; specHash: string }>();
  /** Why a task must not run although its spec is fine, by key. */
  private readonly blocked = new Map<string, string>();

  /**
   * What was on record when the controller started, before the first set(): each task's generation and spec
   * hash, and the tasks whose status file is unreadable (running one would start over from episode 1 and
   * ignore its caps).
   */
  recall(
    recorded: Iterable<{ namespace: string; name: string; generation: number; specHash: string }>,
    unreadable: ReadonlyMap<string, string>,
  ): void {
    for (const r of recorded) this.generations.set(`${r.namespace}/${r.name}`, r);
    for (const [key, why] of unreadable) this.blocked.set(key, why);
  }

  /**
   * A task on record whose spec was gone when the controller started (deleted while none ran): a deleted
   * task for the loop, so its recovered episode is recorded and it is released as a deletion is.
   */
  deletedWhileStopped(recorded: { namespace: string; name: string; generation: number; specHash: string }): LocalTask {
    const key = `${recorded.namespace}/${recorded.name}`;
    const { namespace, name, generation, specHash } = recorded;
    const source: SpecTask = { key, namespace, name, file: '', errors: [], specHash, manifest: {} };
    return { key, namespace, name, generation, dependsOn: [], deleting: true, file: '', specHash, source };
  }

  /** A new view of the directory: every task added, edited or removed is announced. */
  set(loaded: LoadedSpecs): void {
    const before = this.tasks;
    const next = new Map<string, LocalTask>();
    for (const [key, spec] of loaded.tasks) {
      const old = before.get(key);
      next.set(
        key,
        old && old.specHash === spec.specHash && sameLabels(old.labels, spec.labels) ? old : this.desired(spec, old),
      );
    }
    this.tasks = next;
    for (const key of new Set([...before.keys(), ...next.keys()])) {
      if (before.get(key) !== next.get(key)) for (const l of this.listeners) l(key);
    }
  }

  /** A person asked to resume the task: the loop sees it with the task and handles its token once. */
  setResumeRequest(key: string, request: ResumeRequest | undefined): void {
    if (request) this.requests.set(key, request);
    else this.requests.delete(key);
    const task = this.tasks.get(key);
    if (!task) return;
    this.tasks.set(key, { ...task, resumeRequest: request });
    for (const l of this.listeners) l(key);
  }

  /** A person set or lifted a suspend hold: the loop sees it with the task. */
  setHold(key: string, hold: SuspendHold | undefined): void {
    if (hold) this.holds.set(key, hold);
    else this.holds.delete(key);
    const task = this.tasks.get(key);
    if (!task) return;
    this.tasks.set(key, { ...task, hold });
    for (const l of this.listeners) l(key);
  }

  get(key: string): LocalTask | undefined {
    return this.tasks.get(key);
  }

  list(): Iterable<LocalTask> {
    return this.tasks.values();
  }

  subscribe(onChange: (key: string) => void): void {
    this.listeners.push(onChange);
  }

  // Spec files are never written: nothing to hold.
  async hold(): Promise<void> {}

  /** A deleted task is let go: a resume request for it does not carry over to a task created again. */
  async release(task: LocalTask): Promise<void> {
    if (this.tasks.has(task.key)) return;
    this.requests.delete(task.key);
    this.holds.delete(task.key);
  }

  /** `old`: the version it replaces, if this source has one; else the generation goes on from the last known. */
  private desired(spec: SpecTask, old?: LocalTask): LocalTask {
    const rec = old ?? this.generations.get(spec.key);
    const generation = !rec ? 1 : rec.specHash === spec.specHash ? rec.generation : rec.generation + 1;
    this.generations.set(spec.key, { generation, specHash: spec.specHash });
    const blocked = this.blocked.get(spec.key);
    return {
      key: spec.key,
      namespace: spec.namespace,
      name: spec.name,
      generation,
      spec: blocked ? undefined : spec.spec,
      specError: blocked
        ? `cannot run: ${blocked}; fix or remove the file to run this task again`
        : spec.errors.join('; ') || undefined,
      dependsOn: dependsOnAsWritten(spec),
      deleting: false,
      resumeRequest: this.requests.get(spec.key),
      hold: this.holds.get(spec.key),
      labels: spec.labels,
      file: spec.file,
      ...(spec.created ? { created: true } : {}),
      specHash: spec.specHash,
      source: spec,
    };
  }
}

function sameLabels(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
): boolean {
  return JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b ?? {}).sort());
}
