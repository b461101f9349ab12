// Episode records on a cluster: one AgentEpisode per finished episode, owned by its AgentTask, created before
// the status that reports the episode's end is written (core/controller.ts); pruning follows in the
// background. The name is a
// pure function of (task, episode number), so a record created twice (a restart before the status was
// on the server) is an AlreadyExists, taken as done. Past spec.history.keep the oldest are deleted, and
// a deleted task's records go with it (no garbage collector needed).
import type { Logger } from 'pino';
import { API_VERSION, GROUP, KIND, VERSION } from '../../api/agent-task.ts';
import { DEFAULT_HISTORY_KEEP, EPISODE_KIND, EPISODE_PLURAL } from '../../api/episode-record.ts';
import type { AgentEpisode, EpisodeRecord } from '../../api/episode-record.ts';
import { EPISODE_LABEL, MANAGED_BY_LABEL, TASK_LABEL, episodePodName } from '../../kube/names.ts';
import type { Informer } from '../../kube/informer.ts';
import type { CustomObject, KubeList, KubeObject } from '../../kube/objects.ts';
import { KubeError, isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import type { ClusterTask } from '../../core/ports.ts';
import { API_RETRY, retryDelayMs } from '../../util/retry-delay.ts';

export function episodesPath(namespace: string, name = ''): string {
  return `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${EPISODE_PLURAL}${name ? `/${name}` : ''}`;
}

/** `<task>-ep-<n>`, like the episode's pod (another kind, so the same name). */
function episodeRecordName(task: string, number: number): string {
  return episodePodName(task, number);
}

function agentEpisodeObject(
  task: ClusterTask,
  record: EpisodeRecord,
): AgentEpisode & { metadata: { ownerReferences: unknown[] } } {
  return {
    apiVersion: API_VERSION,
    kind: EPISODE_KIND,
    metadata: {
      name: episodeRecordName(task.name, record.number),
      namespace: task.namespace,
      labels: { [TASK_LABEL]: task.name, [EPISODE_LABEL]: String(record.number), [MANAGED_BY_LABEL]: 'episodic' },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: KIND,
          name: task.name,
          uid: task.object.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    record,
  };
}

export interface EpisodeRecordWriterOptions {
  client: KubeClient;
  tasks: Informer<CustomObject>;
  log: Logger;
  retryMs?: number;
}

export class EpisodeRecordWriter {
  private readonly opts: EpisodeRecordWriterOptions;
  /** Per task: its record operations, one after the other (a forget waits for a create in flight). */
  private readonly chains = new Map<string, Promise<void>>();
  /** Per task: the numbers of its records, once pruning needed them (listed once, then kept up to date). */
  private readonly known = new Map<string, { uid: string; numbers: number[] }>();
  private readonly warned = new Set<string>();
  private stopped = false;

  constructor(opts: EpisodeRecordWriterOptions) {
    this.opts = opts;
  }

  /** Resolves once the record is created (or given up on, which is logged); older ones are pruned after, in the background. */
  record(task: ClusterTask, record: EpisodeRecord): Promise<void> {
    const logged = (what: string) => (err: unknown) =>
      this.opts.log.error(
        { namespace: task.namespace, task: task.name, episode: record.number, err: String(err) },
        what,
      );
    const created = this.enqueue(task.key, () => this.create(task, record)).catch(logged('episode record not written'));
    void this.enqueue(task.key, () => this.pruneLogged(task, record.number)).catch(logged('records not pruned'));
    return created;
  }

  /** Deletes the task's records (after any still being written); throws when the API server should be asked again. */
  forget(task: ClusterTask): Promise<void> {
    return this.enqueue(task.key, () => this.deleteAll(task));
  }

  /** Resolves once every queued operation finished (tests, shutdown). */
  async drain(): Promise<void> {
    while (this.chains.size > 0) await Promise.allSettled([...this.chains.values()]);
  }

  stop(): void {
    this.stopped = true;
  }

  private enqueue(key: string, op: () => Promise<void>): Promise<void> {
    const run = (this.chains.get(key) ?? Promise.resolve()).catch(() => undefined).then(op);
    const tail = run.catch(() => undefined);
    this.chains.set(key, tail);
    void tail.then(() => {
      if (this.chains.get(key) === tail) this.chains.delete(key);
    });
    return run;
  }

  private async create(task: ClusterTask, record: EpisodeRecord): Promise<void> {
    const body = agentEpisodeObject(task, record);
    const uid = task.object.metadata.uid;
    for (let failures = 0; !this.stopped; ) {
      try {
        await this.opts.client.create(episodesPath(task.namespace), body, 'bookkeeping');
        break;
      } catch (err) {
        if (isStatus(err, 409)) {
          // Looked up with list, the verb pruning needs anyway: the role has no `get` of AgentEpisodes.
          const [existing] = await this.list(task.namespace, {
            fieldSelector: `metadata.name=${body.metadata.name}`,
          }).catch(() => []);
          if (existing && ownerUid(existing) === uid) break; // recorded before a restart
          // A record of an earlier task with this name is in the way: it goes, and ours is created.
          if (existing) await this.delete(existing).catch(() => undefined);
        } else if (this.givesUp(task, err, 'episode records are not written')) {
          return;
        }
        // Unref'd: a retry waiting for an unreachable API server must not keep a stopped controller alive.
        await new Promise((resolve) =>
          setTimeout(
            resolve,
            retryDelayMs({ ...API_RETRY, initialMs: this.opts.retryMs ?? API_RETRY.initialMs }, ++failures, 1),
          ).unref(),
        );
      }
    }
  }

  private async pruneLogged(task: ClusterTask, number: number): Promise<void> {
    if (this.stopped) return; // leadership lost, or shutdown past its grace: nothing more is written
    try {
      await this.prune(task, number);
    } catch (err) {
      this.opts.log.warn(
        { namespace: task.namespace, task: task.name, err: String(err) },
        'old episode records not pruned yet; the next record tries again',
      );
    }
  }

  /** Deletes the oldest records past spec.history.keep. */
  private async prune(task: ClusterTask, number: number): Promise<void> {
    const keep = task.spec?.history.keep ?? DEFAULT_HISTORY_KEEP;
    const uid = task.object.metadata.uid as string;
    let known = this.known.get(task.key);
    if (!known || known.uid !== uid) {
      // Numbers run from 1: up to `keep` of them, nothing can be past it yet, and no list is needed.
      if (number <= keep) return;
      known = {
        uid,
        numbers: (await this.list(task.namespace, this.ofTask(task)))
          .filter((r) => ownerUid(r) === uid)
          .map(recordNumber),
      };
      this.known.set(task.key, known);
    }
    if (!known.numbers.includes(number)) known.numbers.push(number);
    known.numbers.sort((a, b) => a - b);
    while (known.numbers.length > keep && !this.stopped) {
      const oldest = known.numbers[0];
      await this.delete({ metadata: { name: episodeRecordName(task.name, oldest), namespace: task.namespace } });
      known.numbers.shift();
    }
  }

  private async deleteAll(task: ClusterTask): Promise<void> {
    this.known.delete(task.key);
    let records: KubeObject[];
    try {
      records = await this.list(task.namespace, this.ofTask(task));
    } catch (err) {
      if (this.givesUp(task, err, 'records of deleted tasks are left to the garbage collector')) return;
      throw err;
    }
    // A new task with the same name may exist already (this one is gone): its records stay.
    const live = this.opts.tasks.get(task.key);
    const keepUid =
      live && live.metadata.uid !== task.object.metadata.uid && !live.metadata.deletionTimestamp
        ? live.metadata.uid
        : undefined;
    await Promise.all(records.filter((r) => ownerUid(r) !== keepUid).map((r) => this.delete(r)));
  }

  private ofTask(task: ClusterTask): { labelSelector: string } {
    return { labelSelector: `${TASK_LABEL}=${task.name}` };
  }

  private async list(namespace: string, query: Record<string, string>): Promise<KubeObject[]> {
    const list = await this.opts.client.get<KubeList<KubeObject>>(episodesPath(namespace), query, 'bookkeeping');
    return (list.items ?? []) as KubeObject[];
  }

  private async delete(obj: { metadata: { name: string; namespace?: string; uid?: string } }): Promise<void> {
    const preconditions = obj.metadata.uid ? { uid: obj.metadata.uid } : undefined;
    try {
      await this.opts.client.delete(
        episodesPath(obj.metadata.namespace as string, obj.metadata.name),
        { apiVersion: 'v1', kind: 'DeleteOptions', preconditions },
        'bookkeeping',
      );
    } catch (err) {
      // Gone already, or another object has the name now: nothing of ours to delete.
      if (!isStatus(err, 404) && !isStatus(err, 409)) throw err;
    }
  }

  /**
   * Errors retrying cannot fix: the CRD is not installed (404: a `helm upgrade` does not add CRDs), the
   * role lacks the verbs (403), the API server refuses the object (400, 422). Warned about once per kind.
   */
  private givesUp(task: ClusterTask, err: unknown, consequence: string): boolean {
    if (!(err instanceof KubeError) || ![400, 403, 404, 422].includes(err.status)) return false;
    const kind = `${err.status}`;
    if (!this.warned.has(kind)) {
      this.warned.add(kind);
      const hint =
        err.status === 404 ? ' (is the AgentEpisode CRD installed? `episodic crd | kubectl apply -f -`)' : '';
      this.opts.log.warn(
        { namespace: task.namespace, task: task.name, err: err.message },
        `${consequence}: ${err.message}${hint}`,
      );
    }
    return true;
  }
}

function ownerUid(obj: KubeObject): string | undefined {
  return obj.metadata.ownerReferences?.find((o) => o.controller)?.uid;
}

function recordNumber(obj: KubeObject): number {
  return Number((obj as { record?: { number?: number } }).record?.number ?? obj.metadata.labels?.[EPISODE_LABEL]);
}
