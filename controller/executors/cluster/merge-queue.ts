// The merge queue on a cluster (core/merge-queue-loop.ts runs it in the leader). A queue is per namespace
// (`NS/QUEUE`: its tasks' git Secrets are). Its clone lives in the controller's scratch volume (the chart's
// /tmp emptyDir) and may be lost with the pod: a new leader clones again. Its journal must not be lost, so it
// is a ConfigMap `episodic-merge-queue-QUEUE` in the namespace, not the tasks' status: the status is written
// behind (coalesced, a pass later), the journal must be on the server before its step runs, and a write per
// step would be several status writes per integration where §4 wants one. Each write is guarded by the
// ConfigMap's resourceVersion, so a deposed leader's write fails instead of undoing the new leader's.
import path from 'node:path';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import type { Gate, GateRun } from '../../api/gates.ts';
import type { GitCredentials } from '../../git/git-credentials.ts';
import type { MergeQueuePorts, QueueJournals, QueuePulls, QueueTask } from '../../core/merge-queue-ports.ts';
import type { ResolutionRun } from '../../core/ports.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import { MANAGED_BY_LABEL } from '../../kube/names.ts';
import type { QueueJournal } from '../../reconciler/merge-queue.ts';
import { MERGE_QUEUE_ENV } from '../local/episode-launcher.ts';
import { readGitCredentials } from './git-secret.ts';
import { gitWorkspaceOf } from '../../api/git-workspace.ts';

export const MERGE_QUEUE_LABEL = 'episodic.dev/merge-queue';
const JOURNAL_KEY = 'journal';

interface ConfigMap {
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
}

export const journalConfigMapName = (queue: string): string => `episodic-merge-queue-${queue}`;

/** `NS/QUEUE` → its namespace and name (both DNS labels). */
function split(queue: string): { namespace: string; name: string } {
  const at = queue.indexOf('/');
  return { namespace: queue.slice(0, at), name: queue.slice(at + 1) };
}

/** The journals of every queue the controller watches: listed once when it starts leading, then written through. */
export class KubeQueueJournals implements QueueJournals {
  private readonly client: KubeClient;
  private readonly known = new Map<string, { journal: QueueJournal; resourceVersion?: string }>();

  constructor(client: KubeClient) {
    this.client = client;
  }

  async load(namespace: string | undefined): Promise<void> {
    const where = namespace ? `/api/v1/namespaces/${namespace}/configmaps` : '/api/v1/configmaps';
    const list = await this.client.get<{ items: ConfigMap[] }>(where, { labelSelector: MERGE_QUEUE_LABEL });
    this.known.clear();
    for (const cm of list.items) {
      const queue = `${cm.metadata.namespace}/${cm.metadata.labels?.[MERGE_QUEUE_LABEL]}`;
      const text = cm.data?.[JOURNAL_KEY];
      if (!text) continue;
      try {
        this.known.set(queue, { journal: JSON.parse(text), resourceVersion: cm.metadata.resourceVersion });
      } catch {
        // Not ours to read: the queue starts afresh (nothing of it reached `into` unjournalled).
      }
    }
  }

  read(queue: string): QueueJournal | undefined {
    return this.known.get(queue)?.journal;
  }

  async write(queue: string, journal: QueueJournal | undefined): Promise<void> {
    const { namespace, name } = split(queue);
    const base = `/api/v1/namespaces/${namespace}/configmaps`;
    const prev = this.known.get(queue);
    if (!journal) {
      if (!prev) return;
      const preconditions = prev.resourceVersion ? { resourceVersion: prev.resourceVersion } : undefined;
      await this.client
        .delete(`${base}/${journalConfigMapName(name)}`, { apiVersion: 'v1', kind: 'DeleteOptions', preconditions })
        .catch((err: unknown) => {
          if (!isStatus(err, 404)) throw err;
        });
      this.known.delete(queue);
      return;
    }
    const data = { [JOURNAL_KEY]: JSON.stringify(journal) };
    const cm: ConfigMap = prev
      ? await this.client.mergePatch(
          `${base}/${journalConfigMapName(name)}`,
          { metadata: { resourceVersion: prev.resourceVersion }, data },
          'work',
        )
      : await this.client.create(
          base,
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: {
              name: journalConfigMapName(name),
              labels: { [MERGE_QUEUE_LABEL]: name, [MANAGED_BY_LABEL]: 'episodic' },
            },
            data,
          },
          'work',
        );
    this.known.set(queue, { journal, resourceVersion: cm.metadata.resourceVersion });
  }
}

/** One gate run of a task: the queue's name (the spec's), its scratch branch, its clone and the task's credentials. */
export interface QueueGatePodRun {
  queue: string;
  branch: string;
  task: QueueTask;
  clone: string;
  credentials?: GitCredentials;
}

/** Runs the queue's gates in a pod (cluster/merge-queue.ts binds it to the pod executor). */
export interface QueueGatePodPort {
  run(run: QueueGatePodRun, gates: readonly Gate[]): Promise<GateRun[]>;
  /** What is left of a run (its pod, its scratch branch) is removed. */
  stop(run: QueueGatePodRun): Promise<void>;
}

export interface ClusterQueueOptions {
  client: KubeClient;
  journals: QueueJournals;
  /** The controller's scratch directory (the chart's emptyDir). */
  dir: string;
  /** The controller runs no project code: queue gates run in a pod of the task's image. */
  gatePods?: QueueGatePodPort;
  /** Tasks' pull requests (sources/cluster/trigger-queue-pulls.ts); without it every task is pushed. */
  pulls?: QueuePulls<QueueTask>;
}

export function clusterQueuePorts(opts: ClusterQueueOptions): MergeQueuePorts<QueueTask> {
  const credentials = async (task: QueueTask): Promise<GitCredentials | undefined> => {
    const ref = gitOf(task.spec, task.key).secretRef;
    if (!ref) return undefined;
    const found = await readGitCredentials(opts.client, task.key.slice(0, task.key.indexOf('/')), ref.name);
    if (!found.ok) throw new Error(found.message);
    return found.value;
  };
  // '.merge-queue' is no namespace name: it cannot meet best-of-N's DIR/NS/TASK clones.
  const cloneDir = (queue: string) => path.join(opts.dir, '.merge-queue', split(queue).namespace, split(queue).name);
  const gateRun = async (queue: string, task: QueueTask): Promise<QueueGatePodRun> => ({
    queue: split(queue).name,
    branch: scratchBranch(queue, task.key.slice(task.key.indexOf('/') + 1)),
    task,
    clone: cloneDir(queue),
    credentials: await credentials(task),
  });
  return {
    pulls: opts.pulls,
    journals: opts.journals,
    cloneDir,
    queueOf: (task) => {
      const q = task.spec.integrate?.queue;
      return q ? `${task.key.slice(0, task.key.indexOf('/'))}/${q}` : undefined;
    },
    shownName: (queue) => split(queue).name,
    remoteUrl: (task) => gitOf(task.spec, task.key).url,
    credentials,
    gates: async (queue, task, gates) => {
      if (gates.length === 0) return []; // after a resolution a gateless queue passes through the gate step
      if (!opts.gatePods) throw new Error('the merge queue has no gate pods to run its gates in');
      return opts.gatePods.run(await gateRun(queue, task), gates);
    },
    stopGates: async (queue, task) => opts.gatePods?.stop(await gateRun(queue, task)),
    metricLabels: (queue) => ({ namespace: split(queue).namespace, queue: split(queue).name }),
  };
}

function gitOf(spec: AgentTaskSpec, key: string) {
  const git = gitWorkspaceOf(spec.workspace);
  if (!git) throw new Error(`${key}: spec.integrate needs workspace.git`);
  return git;
}

/** The scratch branch a resolution episode's pod clones and pushes back to. */
export function scratchBranch(queue: string, task: string): string {
  return `episodic/merge-queue/${split(queue).name}/${task}`;
}

/**
 * The spec of a resolution episode's pod: the task's agent, sandbox and limits on the scratch branch, the
 * resolution prompt, no steps, gates, scope or checklist (the queue judges the result itself).
 */
export function resolutionSpec(spec: AgentTaskSpec, run: ResolutionRun): AgentTaskSpec {
  const git = gitOf(spec, 'resolution');
  const { steps: _steps, promptFile: _file, stack: _stack, scope: _scope, ...rest } = spec;
  return {
    ...rest,
    prompt: run.template,
    workspace: { git: { ...git, ref: run.branch ?? git.ref, from: undefined } },
    progress: { ...spec.progress, checklist: undefined },
    agent: { ...spec.agent, env: [...spec.agent.env, { name: MERGE_QUEUE_ENV, value: '1' }] },
  } as AgentTaskSpec;
}
