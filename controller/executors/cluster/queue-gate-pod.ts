// A cluster merge queue's gates run in a pod, never in the controller (it holds the service account and the
// git Secrets): the task's image, sandbox (its NetworkPolicy selects the pod by the task label), limits and
// hardened security context, as its episode pods have, but `episodic queue-gates` instead of the agent and no
// model credentials. The pod clones the queue's scratch branch, runs the gates and reports their runs in its
// termination message; the queue waits for it as for a resolution pod (resolution-pod.ts).
import type { AgentTaskSpec, AgentTaskStatus } from '../../api/agent-task.ts';
import { clip, GATE_OUTPUT_MAX } from '../../api/bounds.ts';
import { EPISODE_CONFIG_ENV, EPISODE_PROMPT_ENV } from '../../api/episode-config.ts';
import { episodeResult } from '../../api/episode-result.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { Gate, GateRun } from '../../api/gates.ts';
import { QUEUE_GATES_CONFIG_ENV } from '../../api/queue-gates-config.ts';
import type { QueueGatesConfig } from '../../api/queue-gates-config.ts';
import { effectiveSpec } from '../../api/steps.ts';
import type { ClusterTask } from '../../core/ports.ts';
import type { EpisodeDefaults } from '../../kube/episode-defaults.ts';
import type { Informer } from '../../kube/informer.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import { EPISODE_LABEL, GATE_LABEL, queueGatePodName } from '../../kube/names.ts';
import type { Pod } from '../../kube/objects.ts';
import { buildEpisodePod } from './episode-pod.ts';
import type { EpisodePod } from './episode-pod.ts';
import { fenceTask, sandboxRefusal } from './network-policy-writes.ts';
import { proxyEnv } from './proxy-env.ts';
import { podEnd } from './resolution-pod.ts';

/** Time for the clone and the runner around the gates' own timeouts. */
const GATE_POD_OVERHEAD_SECONDS = 600;
/** The gateway's place taken by nothing: the pod gets no provider key (the gates call no model). */
const NO_MODEL_KEYS = { env: {}, tokenSha256: '' };

export interface QueueGatePodInput {
  task: { metadata: { name: string; namespace: string; uid?: string } };
  /** The task's effective spec: its image, sandbox, env and limits. */
  spec: AgentTaskSpec;
  /** The queue's name as in the spec. */
  queue: string;
  /** The scratch branch holding the rebased commit. */
  branch: string;
  commit: string;
  gates: readonly Gate[];
  defaults?: EpisodeDefaults;
  proxyEnv?: ReadonlyArray<{ name: string; value: string }>;
}

/** An episode pod of the task with `episodic queue-gates` for its agent: named, labelled and bounded for the gates. */
export function buildQueueGatePod(input: QueueGatePodInput): EpisodePod {
  const git = gitOf(input.spec);
  const spec = {
    ...input.spec,
    prompt: '',
    promptFile: undefined,
    stack: undefined,
    steps: undefined,
  } as AgentTaskSpec;
  const pod = buildEpisodePod({
    task: input.task,
    spec,
    episode: 1,
    defaults: input.defaults,
    gateway: NO_MODEL_KEYS,
    proxyEnv: input.proxyEnv,
  });
  const config: QueueGatesConfig = {
    task: input.task.metadata.name,
    namespace: input.task.metadata.namespace,
    queue: input.queue,
    commit: input.commit,
    git: { ...git, ref: input.branch, from: undefined },
    gates: [...input.gates],
    workspaceDir: '/workspace',
  };
  const container = pod.spec.containers[0] as NonNullable<(typeof pod.spec.containers)[0]>;
  container.command = ['episodic', 'queue-gates'];
  const runnerEnv = new Set([EPISODE_CONFIG_ENV, EPISODE_PROMPT_ENV]);
  container.env = [
    { name: QUEUE_GATES_CONFIG_ENV, value: JSON.stringify(config) },
    ...(container.env ?? []).filter((e) => !runnerEnv.has(e.name)),
  ];
  const { [EPISODE_LABEL]: _episode, ...labels } = pod.metadata.labels ?? {};
  pod.metadata = {
    ...pod.metadata,
    name: queueGatePodName(input.task.metadata.name),
    labels: { ...labels, [GATE_LABEL]: 'true' },
  };
  pod.spec.activeDeadlineSeconds = gateDeadlineSeconds(input.gates);
  return pod;
}

/** Each gate's fix and check may take its timeout, plus the clone. */
export function gateDeadlineSeconds(gates: readonly Gate[]): number {
  return gates.reduce((sum, g) => sum + g.timeoutSeconds * (g.fix ? 2 : 1), GATE_POD_OVERHEAD_SECONDS);
}

/**
 * What the queue makes of a gate pod's result: the runs it reported; a transient end (evicted, a clone that
 * failed) throws, so the queue runs the gates again on its next pass; any other end without runs is a failure
 * of the first gate, saying why (a resolution episode sees it, then NeedsReview names the gate).
 */
export function gateRunsOf(result: EpisodeResult, gates: readonly Gate[]): GateRun[] {
  if (result.gates && result.gates.length > 0) return result.gates;
  if (result.errorClass === 'transient') throw new Error(`the gate pod did not run the gates: ${result.message ?? ''}`);
  const why = result.message ?? `exit code ${result.exitCode ?? 'none'}`;
  const name = gates[0]?.name ?? 'gates';
  return [{ name, exitCode: null, output: clip(`the gate pod did not run the gates: ${why}`, GATE_OUTPUT_MAX) }];
}

export interface QueueGateRequest {
  queue: string;
  branch: string;
  commit: string;
  gates: readonly Gate[];
  status: AgentTaskStatus;
  /** Aborted when the queue halts: the wait ends, the next leader stops the pod. */
  signal?: AbortSignal;
}

export interface QueueGatePodsOptions {
  client: KubeClient;
  pods: Informer<Pod>;
  imagePullGraceMs: number;
  episodeDefaults?: EpisodeDefaults;
  proxyKey?: Buffer;
  /** Resolves on the next change of any pod in the cache. */
  changed(): Promise<void>;
  deletePod(pod: Pod): Promise<void>;
}

/** Gate pods of the pod executor's tasks: one per task at a time, replaced by the next run. */
export class QueueGatePods {
  private readonly opts: QueueGatePodsOptions;

  constructor(opts: QueueGatePodsOptions) {
    this.opts = opts;
  }

  async run(task: ClusterTask, req: QueueGateRequest): Promise<EpisodeResult> {
    if (!task.spec) throw new Error(`${task.key} has no valid spec for its queue gates`);
    const spec = effectiveSpec(task.spec, req.status);
    const refusal = sandboxRefusal(spec, this.opts.episodeDefaults);
    if (refusal) return episodeResult({ exitCode: null, errorClass: 'fatal', message: refusal });
    await this.stop(task); // the last run's pod (kept for its log) makes way
    await fenceTask(this.opts.client, task, spec, this.opts.episodeDefaults);
    const pod = buildQueueGatePod({
      task: { metadata: { name: task.name, namespace: task.namespace, uid: task.object.metadata.uid } },
      spec,
      queue: req.queue,
      branch: req.branch,
      commit: req.commit,
      gates: req.gates,
      defaults: this.opts.episodeDefaults,
      proxyEnv: proxyEnv(task, spec, this.opts.episodeDefaults?.sandbox?.proxy, this.opts.proxyKey),
    });
    try {
      this.opts.pods.upsert(
        await this.opts.client.create<Pod>(`/api/v1/namespaces/${task.namespace}/pods`, pod, 'work'),
      );
    } catch (err) {
      if (isStatus(err, 400) || isStatus(err, 422) || isStatus(err, 403)) {
        const detail = (err as Error).message;
        return episodeResult({
          exitCode: null,
          errorClass: 'fatal',
          message: `the API server refused the gate pod: ${detail}`,
        });
      }
      throw err;
    }
    const key = `${task.namespace}/${pod.metadata.name}`;
    return podEnd(0, {
      pod: () => this.opts.pods.get(key),
      refused: () => undefined,
      changed: () => this.opts.changed(),
      imagePullGraceMs: this.opts.imagePullGraceMs,
      deleteStuck: (p) => this.opts.deletePod(p),
      signal: req.signal,
    });
  }

  /** Deletes the task's gate pod, if any, and waits until it is gone. */
  async stop(task: ClusterTask): Promise<void> {
    const key = `${task.namespace}/${queueGatePodName(task.name)}`;
    const pod = this.opts.pods.get(key);
    if (pod) await this.opts.deletePod(pod);
    while (this.opts.pods.get(key)) await this.opts.changed();
  }
}

function gitOf(spec: AgentTaskSpec) {
  const ws = spec.workspace;
  if (!ws || typeof ws !== 'object' || !('git' in ws)) throw new Error('queue gates need workspace.git');
  return ws.git;
}
