// Episodes on a cluster: one Pod per episode, named after (task, episode number) so creating it twice is
// harmless and a restarted controller adopts what runs. observe() reports what the pods say; the facts
// only pods can tell (who deleted one, what it said last, a create the API server refused) are kept here.
import type { LiveSpend } from '../../reconciler/spend-cap.ts';
import type { Logger } from 'pino';
import type { AgentTaskStatus } from '../../api/agent-task.ts';
import { episodeResult } from '../../api/episode-result.ts';
import { currentStep, effectiveSpec } from '../../api/steps.ts';
import type { EpisodeDefaults } from '../../kube/episode-defaults.ts';
import { effectiveSkipWhen } from '../../reconciler/scope.ts';
import { TerminalError } from '../../core/ports.ts';
import type { EpisodeExecutor, UpstreamOutputs } from '../../core/ports.ts';
import { outputScope } from '../../api/outputs.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Pod } from '../../kube/objects.ts';
import { objectKey } from '../../kube/informer.ts';
import { KubeError, isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import type { Lane } from '../../kube/rate-limiter.ts';
import type { ObservedEpisode, StopReason } from '../../reconciler/reconcile.ts';
import type { ClusterTask } from '../../core/ports.ts';
import { episodePodName, isQueuePod, podEpisode, RESOLUTION_LABEL, TASK_LABEL } from '../../kube/names.ts';
import { buildEpisodePod } from './episode-pod.ts';
import { deletePolicy, fenceTask, sandboxRefusal } from './network-policy-writes.ts';
import { proxyEnv } from './proxy-env.ts';
import { isRunningPod, observeDeletedPod, observePod } from './pod-outcome.ts';
import { ownerUid, podsToTidy } from './pod-tidy.ts';
import { clusterPromptVars } from '../../ops/cluster-prompt.ts';
import type { EpisodeLeash } from '../../api/episode-leash.ts';
import type { ClusterGatewayBinding } from './gateway-binding.ts';
import { PodGrants } from './pod-grants.ts';
import { ClusterAttemptsGit } from './attempts-git.ts';
import type { AdoptOutcome } from '../../api/attempts.ts';
import type { AdoptWinner, ResolutionRun } from '../../core/ports.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { resolutionSpec } from './merge-queue.ts';
import { podEnd } from './resolution-pod.ts';
import { QueueGatePods } from './queue-gate-pod.ts';
import type { QueueGateRequest } from './queue-gate-pod.ts';
import { tmpdir } from 'node:os';
import path from 'node:path';

// Pods we deleted and pods that vanished are remembered this long (an hour of pod churn at most).
const MEMORY_MS = 60 * 60_000;

export interface PodExecutorOptions {
  client: KubeClient;
  pods: Informer<Pod>;
  log: Logger;
  /** Finished pods kept per task (for `kubectl logs`), newest first. */
  podRetention: number;
  /** How long a pod may fail to pull its image before its episode is fatal. */
  imagePullGraceMs: number;
  episodeDefaults?: EpisodeDefaults;
  /** The model gateway the leader serves (tasks with spec.agent.credentials); absent: such tasks cannot run. */
  gateway?: ClusterGatewayBinding;
  /** The key of the controller's CONNECT proxy credentials (sandbox-proxy.ts); none: pods get no proxy. */
  proxyKey?: Buffer;
  /** Where best-of-N's clones go (adopting a winner, the judge's diffs); default: TMPDIR/episodic-git. */
  gitDir?: string;
}

export class PodEpisodeExecutor implements EpisodeExecutor<ClusterTask> {
  private readonly opts: PodExecutorOptions;
  /** Pods holding a concurrency slot, from the pod cache: a restarted controller sees what runs. */
  private readonly running = new Set<string>();
  private readonly deletedByUs = new Map<string, number>();
  /** Pod key → the last state of a pod that disappeared. */
  private readonly tombstones = new Map<string, { pod: Pod; at: number }>();
  /** Task key → an episode whose pod the API server refused to create. */
  private readonly refused = new Map<string, { number: number; message: string }>();
  /** Pods stuck pulling their image, to delete once their episode is on record. */
  private readonly stuck = new Set<string>();
  private listeners: Array<(key: string) => void> = [];
  /** Resolution episodes waiting for their pod to end. */
  private readonly podWaiters = new Set<() => void>();
  private readonly grants: PodGrants;
  private readonly attemptsGit: ClusterAttemptsGit;
  private readonly gatePods: QueueGatePods;

  constructor(opts: PodExecutorOptions) {
    this.opts = opts;
    this.attemptsGit = new ClusterAttemptsGit({
      client: opts.client,
      dir: opts.gitDir ?? path.join(tmpdir(), 'episodic-git'),
    });
    this.gatePods = new QueueGatePods({
      ...opts,
      changed: () => new Promise<void>((resolve) => this.podWaiters.add(resolve)),
      deletePod: (pod) => this.deletePod(pod, 'work'),
    });
    this.grants = new PodGrants({
      binding: opts.gateway,
      log: opts.log,
      stopPod: (namespace, task, episode) => {
        const pod = this.opts.pods.get(`${namespace}/${episodePodName(task, episode)}`);
        if (pod) void this.deletePod(pod, 'work').catch(() => undefined);
      },
      failEpisode: (key, number, message) => {
        this.refused.set(key, { number, message });
        const pod = this.opts.pods.byIndex('task', key).find((p) => podEpisode(p) === number);
        if (pod) void this.deletePod(pod, 'work').catch(() => undefined);
        this.notify(key);
      },
    });
    opts.pods.addIndex('task', (pod) => {
      const task = pod.metadata.labels?.[TASK_LABEL];
      return task ? [`${pod.metadata.namespace}/${task}`] : [];
    });
    opts.pods.on({
      add: (pod) => this.podChanged(pod),
      update: (_old, pod) => this.podChanged(pod),
      delete: (pod) => {
        this.tombstones.set(objectKey(pod), { pod, at: Date.now() });
        this.forgetOld();
        this.podChanged(pod, true);
      },
    });
  }

  observe(task: ClusterTask, status: AgentTaskStatus, now: Date): ObservedEpisode | undefined {
    const current = status.currentEpisode;
    const refused = this.refused.get(task.key);
    if (refused && current?.number === refused.number) {
      return {
        number: refused.number,
        state: 'finished',
        result: episodeResult({ exitCode: null, errorClass: 'fatal', message: refused.message }),
      };
    }
    const opts = { now, imagePullGraceMs: this.opts.imagePullGraceMs };
    let newest: Pod | undefined;
    for (const pod of this.podsOf(task)) {
      if (isQueuePod(pod)) continue; // the merge queue's, not the task loop's
      if ((podEpisode(pod) ?? 0) > (newest ? (podEpisode(newest) ?? 0) : 0)) newest = pod;
    }
    const newestNumber = newest ? (podEpisode(newest) ?? 0) : 0;
    if (current && current.number > newestNumber) {
      const podKey = `${task.namespace}/${episodePodName(task.name, current.number)}`;
      const tomb = this.tombstones.get(podKey);
      if (!tomb && !this.deletedByUs.has(podKey)) return { number: current.number, state: 'gone' }; // never created
      const gone = observeDeletedPod(
        current.number,
        { ...opts, deletedByController: this.deletedByUs.has(podKey) },
        tomb?.pod,
      );
      return this.grants.withMetered(podKey, gone);
    }
    if (!newest) return undefined;
    const seen = observePod(newest, { ...opts, deletedByController: this.deletedByUs.has(objectKey(newest)) });
    if (seen.deletePod) this.stuck.add(objectKey(newest));
    if (task.spec && current?.number === newestNumber)
      this.grants.ensure(this.target(task, newestNumber, status), newest);
    return this.grants.withMetered(objectKey(newest), { ...seen.episode, podName: newest.metadata.name });
  }

  start(
    task: ClusterTask,
    number: number,
    status: AgentTaskStatus,
    upstream?: UpstreamOutputs,
    leash?: EpisodeLeash,
  ): Promise<Record<string, unknown>> {
    return this.launch(task, number, status, { upstream, leash });
  }

  private async launch(
    task: ClusterTask,
    number: number,
    status: AgentTaskStatus,
    how: { upstream?: UpstreamOutputs; leash?: EpisodeLeash; resolution?: boolean },
  ): Promise<Record<string, unknown>> {
    const { upstream, leash } = how;
    if (!task.spec) throw new TerminalError(`${task.key} has no valid spec to start`);
    // In a pipeline, the current step's prompt, agent, completion and limits.
    const spec = effectiveSpec(task.spec, status);
    const stack = spec.stack ? (status.stack?.frames ?? spec.stack) : undefined;
    const refusal = sandboxRefusal(spec, this.opts.episodeDefaults);
    if (refusal) {
      this.refused.set(task.key, { number, message: refusal });
      this.notify(task.key);
      return {};
    }
    await fenceTask(this.opts.client, task, spec, this.opts.episodeDefaults);
    const more = await clusterPromptVars(this.opts.client, task.namespace, spec, stack);
    // Last before the pod is built: nothing that may throw lies between issuing the token and creating the pod.
    const gateway = await this.grants.open({ ...this.target(task, number, status), spec }, leash);
    if (gateway && !gateway.ok) {
      this.refused.set(task.key, { number, message: gateway.message });
      this.notify(task.key);
      return {};
    }
    const pod = buildEpisodePod({
      stack,
      more,
      task: { metadata: { name: task.name, namespace: task.namespace, uid: task.object.metadata.uid } },
      spec,
      step: currentStep(task.spec, status),
      skipWhen: effectiveSkipWhen(task.spec, status),
      episode: number,
      lastEpisodeMessage: status.lastEpisode?.message,
      outputs: outputScope(status.steps, upstream),
      promptVars: task.promptVars,
      defaults: this.opts.episodeDefaults,
      status,
      gateway,
      proxyEnv: proxyEnv(task, spec, this.opts.episodeDefaults?.sandbox?.proxy, this.opts.proxyKey),
      resolution: how.resolution,
    });
    const path = `/api/v1/namespaces/${task.namespace}/pods`;
    try {
      this.opts.pods.upsert(await this.opts.client.create<Pod>(path, pod, 'work'));
    } catch (err) {
      // The pod built here does not run: its token must not outlive this start.
      if (gateway) this.opts.gateway?.revoke(gateway.tokenSha256);
      if (isStatus(err, 409)) {
        // Our deterministic name exists: adopt it if it is ours, clear it away if it is a leftover.
        const existing = await this.opts.client.get<Pod>(`${path}/${pod.metadata.name}`);
        if (ownerUid(existing) !== task.object.metadata.uid) {
          await this.deletePod(existing, 'work');
          throw new KubeError(
            409,
            'AlreadyExists',
            `pod ${pod.metadata.name} of an earlier task with this name is in the way; deleted it`,
          );
        }
        this.opts.pods.upsert(existing);
      } else if (isRefusal(err)) {
        // Retrying sends the same pod again: the episode is over, as the API server says.
        this.refused.set(task.key, {
          number,
          message: `the API server refused the episode pod: ${(err as KubeError).detail}`,
        });
        this.notify(task.key);
      } else {
        throw err;
      }
    }
    return { pod: pod.metadata.name };
  }

  /** Best-of-N on a cluster: the controller's own clone moves the task's branch (attempts-git.ts). */
  adoptWinner(task: ClusterTask, action: AdoptWinner): Promise<AdoptOutcome> {
    return this.attemptsGit.adopt(task, action);
  }

  attemptDiffs(task: ClusterTask, attempts: readonly { number: number; branch?: string }[]) {
    return this.attemptsGit.diffs(task, attempts);
  }

  /** A merge queue's resolution episode: a pod of the task's agent on the queue's scratch branch. */
  async resolve(task: ClusterTask, run: ResolutionRun): Promise<EpisodeResult> {
    if (!task.spec) throw new TerminalError(`${task.key} has no valid spec for a resolution episode`);
    const spec = resolutionSpec(effectiveSpec(task.spec, run.status), run);
    const promptVars = { ...task.promptVars, ...run.vars };
    this.refused.delete(task.key);
    await this.launch({ ...task, spec, promptVars }, run.number, run.status, { resolution: true });
    const podKey = `${task.namespace}/${episodePodName(task.name, run.number)}`;
    const refused = () => {
      const r = this.refused.get(task.key);
      return r?.number === run.number ? r.message : undefined;
    };
    return podEnd(run.number, {
      pod: () => this.opts.pods.get(podKey),
      refused,
      changed: () => new Promise<void>((resolve) => this.podWaiters.add(resolve)),
      imagePullGraceMs: this.opts.imagePullGraceMs,
      deleteStuck: (pod) => this.deletePod(pod, 'work'),
      signal: run.signal,
    });
  }

  /** A merge queue's gates: a pod of the task's image on the queue's scratch branch (queue-gate-pod.ts). */
  queueGates(task: ClusterTask, req: QueueGateRequest): Promise<EpisodeResult> {
    return this.gatePods.run(task, req);
  }

  /** The task's gate pod (a stopped leader's, or the last run's) deleted and gone. */
  stopQueueGates(task: ClusterTask): Promise<void> {
    return this.gatePods.stop(task);
  }

  /** What is left of a resolution episode a stopped leader started: its pod, gone before its number is reused. */
  async killResolution(task: ClusterTask, number: number): Promise<void> {
    const podKey = `${task.namespace}/${episodePodName(task.name, number)}`;
    this.deletedByUs.set(podKey, Date.now());
    const pod = this.opts.pods.get(podKey);
    if (pod) await this.deletePod(pod, 'work');
    while (this.opts.pods.get(podKey)) await new Promise<void>((resolve) => this.podWaiters.add(resolve));
  }

  async stop(task: ClusterTask, number: number, _reason: StopReason): Promise<void> {
    const pod = this.podsOf(task).find((p) => podEpisode(p) === number);
    this.deletedByUs.set(`${task.namespace}/${episodePodName(task.name, number)}`, Date.now());
    if (pod) await this.deletePod(pod, 'work');
    else this.notify(task.key);
  }

  /** Strays of an earlier task with the same name, stuck pods on record, finished pods past retention. */
  async tidy(task: ClusterTask, status: AgentTaskStatus): Promise<void> {
    const doomed = podsToTidy({
      pods: this.opts.pods.byIndex('task', task.key),
      uid: task.object.metadata.uid,
      status,
      serverStatus: task.object.status,
      stuck: this.stuck,
      podRetention: this.opts.podRetention,
    });
    await Promise.all(doomed.map((pod) => this.deletePod(pod, 'bookkeeping')));
  }

  async forget(key: string): Promise<void> {
    this.refused.delete(key);
    const [namespace, name] = key.split('/');
    if (namespace && name) await this.attemptsGit.forget(namespace, name);
    await deletePolicy(this.opts.client, this.opts.log, key);
    await Promise.all(this.opts.pods.byIndex('task', key).map((pod) => this.deletePod(pod, 'work')));
  }

  liveSpend(task: { namespace: string; name: string }): LiveSpend | undefined {
    return this.opts.gateway?.liveSpend(task.namespace, task.name);
  }

  runningCount(): number {
    return this.running.size;
  }

  keys(): Iterable<string> {
    const keys = new Set<string>();
    for (const pod of this.opts.pods.list()) {
      const task = pod.metadata.labels?.[TASK_LABEL];
      if (task) keys.add(`${pod.metadata.namespace}/${task}`);
    }
    return keys;
  }

  subscribe(onChange: (key: string) => void): void {
    this.listeners.push(onChange);
  }

  private target(task: ClusterTask, episode: number, status: AgentTaskStatus) {
    const spec = effectiveSpec(task.spec as NonNullable<ClusterTask['spec']>, status);
    return { namespace: task.namespace, task: task.name, episode, spec, status };
  }

  private podsOf(task: ClusterTask): Pod[] {
    const uid = task.object.metadata.uid;
    return this.opts.pods.byIndex('task', task.key).filter((p) => ownerUid(p) === uid);
  }

  private podChanged(pod: Pod, deleted = false): void {
    const key = objectKey(pod);
    // A resolution pod's slot is the one the merge queue took for it (Controller.takeSlot).
    if (!deleted && isRunningPod(pod) && !pod.metadata.labels?.[RESOLUTION_LABEL]) this.running.add(key);
    else this.running.delete(key);
    if (deleted) this.stuck.delete(key);
    this.grants.podChanged(pod, deleted);
    const task = pod.metadata.labels?.[TASK_LABEL];
    if (task) this.notify(`${pod.metadata.namespace}/${task}`);
    const waiters = [...this.podWaiters];
    this.podWaiters.clear();
    for (const w of waiters) w();
  }

  private async deletePod(pod: Pod, lane: Lane): Promise<void> {
    const key = objectKey(pod);
    if (!this.deletedByUs.has(key)) this.deletedByUs.set(key, Date.now());
    try {
      await this.opts.client.delete(
        `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`,
        {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          propagationPolicy: 'Background',
          preconditions: { uid: pod.metadata.uid },
        },
        lane,
      );
    } catch (err) {
      // Gone already, or a different pod now has the name: nothing of ours to delete.
      if (!isStatus(err, 404) && !isStatus(err, 409)) throw err;
    }
  }

  private forgetOld(): void {
    const now = Date.now();
    for (const [key, t] of this.tombstones) if (now - t.at > MEMORY_MS) this.tombstones.delete(key);
    for (const [key, at] of this.deletedByUs) if (now - at > MEMORY_MS) this.deletedByUs.delete(key);
  }

  private notify(key: string): void {
    for (const l of this.listeners) l(key);
  }
}

/** Pod creates the API server will refuse again if retried: invalid specs and PodSecurity rejections. */
function isRefusal(err: unknown): boolean {
  if (!(err instanceof KubeError)) return false;
  return (
    err.status === 400 ||
    err.status === 422 ||
    (err.status === 403 && /PodSecurity|RuntimeClass .* not found/i.test(err.message))
  );
}
