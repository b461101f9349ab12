// Desired state locally: the AgentTasks of a spec directory, as loaded and then followed by the watcher.
// Generation, which a cluster's API server keeps, is counted here: one up for every new spec hash.
import type { ResumeRequest } from '../../api/resume.ts';
import type { DesiredTask, TaskSource } from '../../core/ports.ts';
import { dependsOnAsWritten } from './spec-files.ts';
import type { LoadedSpecs, SpecTask } from './spec-files.ts';

export interface LocalTask extends DesiredTask {
  /** The file it came from: a relative workspace is resolved against it. */
  file: string;
  specHash: string;
  source: SpecTask;
}

export class SpecDirSource implements TaskSource<LocalTask> {
  private tasks = new Map<string, LocalTask>();
  private listeners: Array<(key: string) => void> = [];
  /** Resume requests from the state directory, by task key (resume-requests.ts). */
  private readonly requests = new Map<string, ResumeRequest>();
  private readonly recorded: (key: string) => { generation: number; specHash: string } | undefined;

  private readonly blocked: (key: string) => string | undefined;

  /**
   * `recorded`: the generation and spec hash on record for a task (from its status file). `blocked`: why a
   * task must not run although its spec is fine (its status file is unreadable: running it would start
   * over from episode 1 and ignore its caps).
   */
  constructor(
    recorded: (key: string) => { generation: number; specHash: string } | undefined,
    blocked: (key: string) => string | undefined = () => undefined,
  ) {
    this.recorded = recorded;
    this.blocked = blocked;
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

  get(key: string): LocalTask | undefined {
    return this.tasks.get(key);
  }

  list(): Iterable<LocalTask> {
    return this.tasks.values();
  }

  subscribe(onChange: (key: string) => void): void {
    this.listeners.push(onChange);
  }

  // Spec files are never written: nothing to hold or release.
  async hold(): Promise<void> {}
  async release(): Promise<void> {}

  /** `old`: the version it replaces, if this source saw one; else the generation comes from the record. */
  private desired(spec: SpecTask, old?: LocalTask): LocalTask {
    const rec = old ?? this.recorded(spec.key);
    const generation = !rec ? 1 : rec.specHash === spec.specHash ? rec.generation : rec.generation + 1;
    const blocked = this.blocked(spec.key);
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
      labels: spec.labels,
      file: spec.file,
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
