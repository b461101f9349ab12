// The console on a cluster: rows from the controller's AgentTask informer cache (no extra apiserver load for
// the fleet or live updates), a task's episodes, blackboard and mailbox read when its page is opened, Resume
// and Suspend as the annotations `episodic resume` / `suspend --kubeconfig` set, PR links from the AgentTrigger
// informer, and episode logs from the pod log API (pod-logs.ts).
import { randomUUID } from 'node:crypto';
import { AgentTaskStatusSchema, emptyStatus } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { AgentBudgetSpecSchema, AgentBudgetStatusSchema } from '../api/agent-budget.ts';
import { EpisodeRecordSchema } from '../api/episode-record.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import { resumeRefusal } from '../api/resume.ts';
import { TASK_LABEL } from '../kube/names.ts';
import type { Informer } from '../kube/informer.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { CustomObject, Pod } from '../kube/objects.ts';
import { episodesPath } from '../sinks/cluster/episode-records.ts';
import { ConsoleEvents } from './console-events.ts';
import { PodLogs } from './pod-logs.ts';
import { clusterBoardAndMail } from './board-view.ts';
import type { EpisodeLog, LogRequest } from './log-text.ts';
import { holdOfAnnotations } from '../api/hold.ts';
import type { SuspendHold } from '../api/hold.ts';
import { setClusterHold } from '../sources/cluster/hold-annotations.ts';
import { requestClusterResume } from '../sources/cluster/resume-annotations.ts';
import { originOf } from './origin.ts';
import { triggerView } from './trigger-views.ts';
import type { TriggerView } from './trigger-views.ts';
import { childrenOf, gateLimitsOf, pullRequestOf, pullRequestsChanged, taskRow, triggerKeyOf } from './views.ts';
import type {
  ActionOutcome,
  BudgetView,
  ConsoleEvent,
  ConsoleSource,
  ResumeOutcome,
  TaskDetail,
  TaskIdentity,
  TaskRow,
} from './views.ts';

export interface ClusterConsoleInputs {
  tasks: Informer<CustomObject>;
  budgets: Informer<CustomObject>;
  pods: Informer<Pod>;
  /** For the PR link of a trigger's tasks (status.pullRequests). */
  triggers?: Informer<CustomObject>;
  client: KubeClient;
}

export class ClusterConsoleSource implements ConsoleSource {
  private readonly inputs: ClusterConsoleInputs;
  private readonly events = new ConsoleEvents();
  private readonly podLogs: PodLogs;

  constructor(inputs: ClusterConsoleInputs) {
    this.inputs = inputs;
    this.podLogs = new PodLogs(inputs);
    inputs.tasks.on({
      add: (obj) => this.events.row(this.rowOf(obj)),
      update: (_old, obj) => this.events.row(this.rowOf(obj)),
    });
    // A PR opened for a task changes its row: the trigger's tasks are sent again.
    inputs.triggers?.on({
      add: (obj) => this.triggerChanged(obj),
      update: (old, obj) => {
        if (pullRequestsChanged(old.status, obj.status)) this.triggerChanged(obj);
      },
    });
  }

  private triggerChanged(trigger: CustomObject): void {
    const key = `${trigger.metadata.namespace}/${trigger.metadata.name}`;
    for (const task of this.inputs.tasks.list())
      if (triggerKeyOf(identityOf(task)) === key) this.events.row(this.rowOf(task));
  }

  private rowOf(obj: CustomObject): TaskRow {
    const id = identityOf(obj);
    const trigger = triggerKeyOf(id);
    const status = trigger ? this.inputs.triggers?.get(trigger)?.status : undefined;
    const origin = originOf(id.namespace, id.labels, (key) => this.inputs.triggers?.get(key)?.spec);
    return taskRow(id, statusOf(obj), { pullRequest: pullRequestOf(status, id.name), origin });
  }

  rows(): TaskRow[] {
    return [...this.inputs.tasks.list()].map((obj) => this.rowOf(obj));
  }

  async detail(namespace: string, name: string): Promise<TaskDetail | undefined> {
    const obj = this.inputs.tasks.get(`${namespace}/${name}`);
    if (!obj) return undefined;
    const [episodes, boardAndMail] = await Promise.all([
      taskEpisodeRecords(this.inputs.client, namespace, name),
      clusterBoardAndMail(this.inputs.client, namespace, name),
    ]);
    const heldBy = (await this.budgets())
      .filter((b) => b.namespace === namespace && b.status?.heldTasks.includes(name))
      .map((b) => `${b.namespace}/${b.name}`);
    return {
      row: this.rowOf(obj),
      status: statusOf(obj),
      episodes,
      heldBy,
      gateLimits: gateLimitsOf(obj.spec),
      hold: holdOfAnnotations(obj.metadata.annotations as Record<string, string> | undefined),
      specSuspend: (obj.spec as { suspend?: unknown } | undefined)?.suspend === true,
      children: childrenOf(this.rows(), namespace, name),
      ...boardAndMail,
    };
  }

  async triggers(): Promise<TriggerView[]> {
    const rows = this.rows();
    return [...(this.inputs.triggers?.list() ?? [])].map((t) =>
      triggerView(
        { namespace: t.metadata.namespace ?? '', name: t.metadata.name, spec: t.spec, status: t.status },
        rows,
      ),
    );
  }

  async budgets(): Promise<BudgetView[]> {
    return [...this.inputs.budgets.list()].map((b) => {
      const spec = AgentBudgetSpecSchema.safeParse(b.spec);
      const status = AgentBudgetStatusSchema.safeParse(b.status ?? {});
      return {
        namespace: b.metadata.namespace ?? '',
        name: b.metadata.name,
        window: spec.success ? spec.data.window : undefined,
        limitUSD: spec.success ? spec.data.limitUSD : undefined,
        status: status.success ? status.data : undefined,
      };
    });
  }

  async episodeLog(
    namespace: string,
    name: string,
    episode: number,
    signal: AbortSignal,
    req?: LogRequest,
  ): Promise<EpisodeLog> {
    const task = this.inputs.tasks.get(`${namespace}/${name}`);
    if (!task) return { ok: false, status: 404, message: `AgentTask ${namespace}/${name} not found` };
    return this.podLogs.episodeLog(task, episode, signal, req);
  }

  async resume(namespace: string, name: string, by: string, episodes?: number): Promise<ResumeOutcome> {
    const obj = this.inputs.tasks.get(`${namespace}/${name}`);
    if (!obj) return { ok: false, status: 404, message: `AgentTask ${namespace}/${name} not found` };
    const { phase, reason } = statusOf(obj);
    const refused = resumeRefusal(`${namespace}/${name}`, phase, reason);
    if (refused) return { ok: false, status: 409, message: refused };
    const token = randomUUID();
    await requestClusterResume(this.inputs.client, namespace, name, { token, by, episodes });
    return { ok: true, token };
  }

  setHold(namespace: string, name: string, hold: SuspendHold): Promise<ActionOutcome> {
    if (!this.inputs.tasks.get(`${namespace}/${name}`))
      return Promise.resolve({ ok: false, status: 404, message: `AgentTask ${namespace}/${name} not found` });
    return setClusterHold(this.inputs.client, namespace, name, hold);
  }

  subscribe(listener: (event: ConsoleEvent) => void): () => void {
    return this.events.subscribe(listener);
  }

  async close(): Promise<void> {
    this.events.close();
  }
}

/** A task's AgentEpisode records, oldest first (one list call: records are never cached). */
export async function taskEpisodeRecords(client: KubeClient, namespace: string, name: string) {
  const list = await client.get<{ items?: Array<{ record?: unknown }> }>(episodesPath(namespace), {
    labelSelector: `${TASK_LABEL}=${name}`,
  });
  return (list.items ?? [])
    .map((i) => EpisodeRecordSchema.safeParse(i.record))
    .filter((r) => r.success)
    .map((r) => r.data as EpisodeRecord)
    .sort((a, b) => a.number - b.number);
}

function statusOf(obj: CustomObject): AgentTaskStatus {
  const parsed = AgentTaskStatusSchema.safeParse(obj.status ?? {});
  return parsed.success ? parsed.data : emptyStatus();
}

function identityOf(obj: CustomObject): TaskIdentity {
  const limits = (obj.spec as { limits?: { maxEpisodes?: unknown; maxCostUSD?: unknown } } | undefined)?.limits;
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  return {
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name,
    labels: obj.metadata.labels,
    createdAt: (obj.metadata as { creationTimestamp?: unknown }).creationTimestamp as string | undefined,
    maxEpisodes: num(limits?.maxEpisodes) ?? 20,
    maxCostUSD: num(limits?.maxCostUSD),
  };
}
