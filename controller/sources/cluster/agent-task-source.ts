// Desired state on a cluster: AgentTasks from an informer. The cleanup finalizer keeps a deleted task
// around until the controller has stopped its episode and removed its pods.
import type { Logger } from 'pino';
import { API_VERSION, KIND } from '../../api/agent-task.ts';
import { resumeRequestOfAnnotations } from '../../api/resume.ts';
import type { ResumeRequest } from '../../api/resume.ts';
import { holdOfAnnotations } from '../../api/hold.ts';
import { clusterSpec } from '../../kube/episode-defaults.ts';
import { taskPath } from '../../kube/names.ts';
import type { EpisodeDefaults } from '../../kube/episode-defaults.ts';
import type { ClusterTask, TaskSource } from '../../core/ports.ts';
import { Finalizer } from '../../kube/finalizer.ts';
import type { Informer } from '../../kube/informer.ts';
import type { CustomObject } from '../../kube/objects.ts';
import { objectKey } from '../../kube/informer.ts';
import type { KubeClient } from '../../kube/kube-client.ts';

const cleanupFinalizer = new Finalizer({
  name: 'episodic.dev/cleanup',
  apiVersion: API_VERSION,
  kind: KIND,
  path: taskPath,
});

// Finalizer patches in flight at once: a flood of new tasks must not pile up thousands of requests.
const FINALIZER_CONCURRENCY = 16;

export interface AgentTaskSourceOptions {
  tasks: Informer<CustomObject>;
  client: KubeClient;
  log: Logger;
  /** --episode-defaults: pod settings for what a task's spec leaves unset. */
  episodeDefaults?: EpisodeDefaults;
}

export class AgentTaskSource implements TaskSource<ClusterTask> {
  private readonly opts: AgentTaskSourceOptions;
  /** Parsed once per object version: the informer replaces the object on every change. */
  private readonly parsed = new WeakMap<CustomObject, ClusterTask>();
  private readonly finalizerPending = new Set<string>();
  private finalizerActive = 0;

  constructor(opts: AgentTaskSourceOptions) {
    this.opts = opts;
  }

  get(key: string): ClusterTask | undefined {
    const obj = this.opts.tasks.get(key);
    return obj ? this.desired(obj) : undefined;
  }

  *list(): Iterable<ClusterTask> {
    for (const obj of this.opts.tasks.list()) yield this.desired(obj);
  }

  subscribe(onChange: (key: string) => void): void {
    this.opts.tasks.on({
      add: (obj) => onChange(objectKey(obj)),
      update: (_old, obj) => onChange(objectKey(obj)),
      delete: (obj) => onChange(objectKey(obj)),
    });
  }

  /** Added in the background, a few at a time; a failure is retried by the next reconcile. */
  async hold(task: ClusterTask): Promise<void> {
    if (task.deleting || cleanupFinalizer.isOn(task.object)) return;
    this.finalizerPending.add(task.key);
    this.pumpFinalizers();
  }

  async release(task: ClusterTask): Promise<void> {
    const obj = this.opts.tasks.get(task.key);
    if (!obj || !cleanupFinalizer.isOn(obj)) return;
    const updated = await cleanupFinalizer.remove(this.opts.client, obj);
    // Without finalizers a deleting object is gone: caching the API's last answer would resurrect it.
    if (updated && !(updated.metadata.deletionTimestamp && (updated.metadata.finalizers ?? []).length === 0))
      this.opts.tasks.upsert(updated);
  }

  private desired(obj: CustomObject): ClusterTask {
    let task = this.parsed.get(obj);
    if (task) return task;
    const { spec, specError } = clusterSpec(obj.spec, this.opts.episodeDefaults);
    const raw = (obj.spec as { dependsOn?: unknown } | undefined)?.dependsOn;
    task = {
      key: objectKey(obj),
      namespace: obj.metadata.namespace as string,
      name: obj.metadata.name,
      generation: obj.metadata.generation ?? 0,
      spec,
      specError,
      dependsOn: spec?.dependsOn ?? (Array.isArray(raw) ? raw.filter((d): d is string => typeof d === 'string') : []),
      deleting: !!obj.metadata.deletionTimestamp,
      resumeRequest: resumeRequestOf(obj),
      hold: holdOfAnnotations(obj.metadata.annotations as Record<string, string> | undefined),
      labels: obj.metadata.labels,
      object: obj,
    };
    this.parsed.set(obj, task);
    return task;
  }

  private pumpFinalizers(): void {
    for (const key of this.finalizerPending) {
      if (this.finalizerActive >= FINALIZER_CONCURRENCY) return;
      this.finalizerPending.delete(key);
      this.finalizerActive++;
      void this.addFinalizer(key).finally(() => {
        this.finalizerActive--;
        this.pumpFinalizers();
      });
    }
  }

  private async addFinalizer(key: string): Promise<void> {
    const obj = this.opts.tasks.get(key);
    if (!obj || cleanupFinalizer.isOn(obj) || obj.metadata.deletionTimestamp) return;
    try {
      const updated = await cleanupFinalizer.add(this.opts.client, obj);
      if (updated) this.opts.tasks.upsert(updated);
    } catch (err) {
      this.opts.log.warn(
        { namespace: obj.metadata.namespace, task: obj.metadata.name, err: String(err) },
        'could not add finalizer; will retry',
      );
    }
  }
}

/** `kubectl annotate at NAME episodic.dev/resume=TOKEN`: the loop handles each token once and records it in status. */
function resumeRequestOf(obj: CustomObject): ResumeRequest | undefined {
  return resumeRequestOfAnnotations(obj.metadata.annotations as Record<string, string> | undefined);
}
