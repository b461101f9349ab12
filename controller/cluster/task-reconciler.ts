// One reconcile of one AgentTask: gather the facts from the caches, ask the pure reconciler what to do,
// and do it (pods, events, status). Ordering rules that keep episodes unique across crashes:
//   * a pod's name is its episode number, so "create" is idempotent and a restart adopts what runs;
//   * a finished episode is written to status BEFORE the next pod is created, so its cost is never lost;
//   * a status that names an episode whose pod does not exist (crash between the two writes) ends that
//     episode as "interrupted" — the number is burnt, never reused.
import type { Logger } from 'pino';
import type { AgentTaskSpec, AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { episodeResult } from '../api/episode-result.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import { conditionsFor } from '../reconciler/conditions.ts';
import { findCycle } from '../reconciler/dependencies.ts';
import { reconcile } from '../reconciler/reconcile.ts';
import type { Action, ObservedEpisode, ReconcileResult } from '../reconciler/reconcile.ts';
import { clusterSpec } from './episode-defaults.ts';
import type { EpisodeDefaults } from './episode-defaults.ts';
import { buildEpisodePod, episodePodName, podEpisode } from './episode-pod.ts';
import { isFinishedPod } from './episode-slots.ts';
import type { EpisodeSlots } from './episode-slots.ts';
import type { EventRecorder } from './events.ts';
import { addFinalizer, hasFinalizer, removeFinalizer } from './finalizer.ts';
import type { Informer, KubeObject } from './informer.ts';
import { objectKey } from './informer.ts';
import { KubeError, isStatus } from './kube-client.ts';
import type { KubeClient } from './kube-client.ts';
import { observeDeletedPod, observePod } from './pod-outcome.ts';
import type { PodObservation, StopIntent } from './pod-outcome.ts';
import type { Lane } from './rate-limiter.ts';
import { parseStatus, sameStatus } from './status-writer.ts';
import type { StatusWriter } from './status-writer.ts';

export interface TaskReconcilerOptions {
  client: KubeClient;
  tasks: Informer<KubeObject>;
  pods: Informer<KubeObject>;
  statusWriter: StatusWriter;
  events: EventRecorder;
  slots: EpisodeSlots;
  metrics: EpisodicMetrics;
  log: Logger;
  budgetUSD?: number;
  podRetention: number;
  imagePullGraceMs: number;
  /** --episode-defaults. */
  episodeDefaults?: EpisodeDefaults;
  enqueueAfter(key: string, delayMs: number): void;
  /** The task now waits for a free slot (or no longer does). */
  setWaitingForSlot(key: string, waiting: boolean): void;
  onPhaseChange(key: string): void;
  now?: () => Date;
}

const MEMORY_MS = 60 * 60_000;
const FINALIZER_CONCURRENCY = 16;

export class TaskReconciler {
  /** podKey → why we deleted it; decides the outcome once the pod is gone. */
  private readonly stopIntents = new Map<string, { intent: StopIntent; at: number }>();
  /** podKey → the last state of a pod that disappeared. */
  private readonly tombstones = new Map<string, { pod: KubeObject; at: number }>();
  /** taskKey → episode whose status is written but whose pod create has not succeeded yet. */
  private readonly startPending = new Map<string, number>();
  /** taskKey → an episode decided without a pod (the API server refused to create it). */
  private readonly overrides = new Map<string, ObservedEpisode>();
  private readonly finalizerPending = new Set<string>();
  private finalizerActive = 0;
  private readonly opts: TaskReconcilerOptions;

  constructor(opts: TaskReconcilerOptions) {
    this.opts = opts;
  }

  podDeleted(pod: KubeObject): void {
    const now = Date.now();
    this.tombstones.set(objectKey(pod), { pod, at: now });
    for (const map of [this.tombstones, this.stopIntents]) {
      if (map.size < 1000) continue;
      for (const [key, value] of map) if (now - value.at > MEMORY_MS) map.delete(key);
    }
  }

  async reconcile(key: string): Promise<void> {
    const [namespace, name] = key.split('/') as [string, string];
    const task = this.opts.tasks.get(key);
    const allPods = this.opts.pods.byIndex('task', key);
    if (!task) {
      // Deleted (or never seen): whatever pods carry its name are orphans.
      await Promise.all(allPods.map((pod) => this.deletePod(pod, 'cleanup', 'bookkeeping')));
      this.forget(key);
      return;
    }
    const uid = task.metadata.uid;
    const pods = allPods.filter((p) => ownerUid(p) === uid);
    const strays = allPods.filter((p) => ownerUid(p) !== uid);
    await Promise.all(strays.map((pod) => this.deletePod(pod, 'cleanup', 'bookkeeping')));
    if (task.metadata.deletionTimestamp) return this.finalize(key, task, pods);

    const log = this.opts.log.child({ namespace, task: name });
    const now = this.opts.now?.() ?? new Date();
    const server = parseStatus(task.status);
    const prev = this.opts.statusWriter.effective(key, server);
    const { spec, specError } = clusterSpec(task.spec, this.opts.episodeDefaults);
    const observation = this.observe(key, task, prev, pods, now);

    const result = this.decide(task, spec, specError, prev, observation, now);
    const { status } = result;
    notePodName(status, pods);
    const start = result.actions.find((a): a is Extract<Action, { type: 'StartEpisode' }> => a.type === 'StartEpisode');
    // Reserve the slot before the first await: parallel reconciles must see it taken.
    if (start) this.opts.slots.reserve();
    try {
      // A finished episode goes on record before the next one can exist.
      if (start && (server.lastEpisode?.number ?? 0) !== (status.lastEpisode?.number ?? 0)) {
        this.startPending.set(key, start.number);
        this.opts.statusWriter.set(key, status);
        await this.opts.statusWriter.flush(key);
      }
      const retry = this.startPending.get(key);
      if (!start && retry !== undefined && status.currentEpisode?.number === retry && spec) {
        await this.startEpisode(key, task, spec, retry, status, log);
      }
      // Events about what already happened go out now; "started" only once the pod exists.
      this.recordEvents(task, result.actions, (reason) => reason !== 'EpisodeStarted');
      for (const action of result.actions) {
        if (action.type === 'StartEpisode' && spec) await this.startEpisode(key, task, spec, action.number, status, log);
        if (action.type === 'StopEpisode') await this.stopEpisode(task, pods, action.number, action.reason, log);
      }
      this.recordEvents(task, result.actions, (reason) => reason === 'EpisodeStarted');
    } finally {
      if (start) this.opts.slots.release();
    }
    if (!sameStatus(prev, status)) {
      this.opts.metrics.observeTransition(namespace, prev, status);
      if (status.phase !== prev.phase) {
        log.info({ phase: status.phase, reason: status.reason, episode: status.currentEpisode?.number ?? status.lastEpisode?.number }, status.message ?? '');
        this.opts.onPhaseChange(key);
      }
    }
    this.opts.statusWriter.set(key, status);

    const recorded = status.lastEpisode?.number ?? 0;
    const override = this.overrides.get(key);
    if (override && recorded >= override.number) this.overrides.delete(key);
    if (observation?.deletePod && recorded >= observation.episode.number) {
      // A pod stuck pulling its image: the episode is on record as fatal, now remove the pod.
      await this.opts.statusWriter.flush(key);
      const stuck = pods.find((p) => podEpisode(p) === observation.episode.number);
      if (stuck) await this.deletePod(stuck, 'cleanup', 'work');
    }
    await this.pruneFinishedPods(pods, server, status);
    if (!hasFinalizer(task)) this.ensureFinalizer(key);

    this.opts.setWaitingForSlot(key, status.reason === 'Queued');
    const delays = [result.requeueAfterMs, observation?.recheckAfterMs].filter((d): d is number => d !== undefined);
    if (delays.length > 0) this.opts.enqueueAfter(key, Math.max(50, Math.min(...delays)));
  }

  private recordEvents(task: KubeObject, actions: Action[], which: (reason: string) => boolean): void {
    for (const a of actions) {
      if (a.type === 'RecordEvent' && which(a.reason)) this.opts.events.record(task, a.eventType, a.reason, a.message);
    }
  }

  /** The reconciler's answer, adjusted for an unschedulable pod: the task waits and its episode clock stands still. */
  private decide(
    task: KubeObject,
    spec: AgentTaskSpec | undefined,
    specError: string | undefined,
    prev: AgentTaskStatus,
    observation: PodObservation | undefined,
    now: Date,
  ): ReconcileResult {
    const { namespace, name } = task.metadata as { namespace: string; name: string };
    const generation = task.metadata.generation ?? 0;
    const unschedulable = observation?.unschedulable && prev.currentEpisode ? observation.unschedulable : undefined;
    const input = {
      namespace,
      name,
      generation,
      spec,
      specError,
      status: unschedulable ? { ...prev, currentEpisode: { ...prev.currentEpisode!, startedAt: now.toISOString() } } : prev,
      episode: observation?.episode,
      dependencies: spec ? this.dependencyPhases(namespace, spec.dependsOn) : {},
      dependencyCycle: spec && spec.dependsOn.length > 0 ? this.cycle(namespace, name) : undefined,
      capacity: this.opts.slots.free() > 0,
      globalBudget: this.opts.budgetUSD !== undefined ? { limitUSD: this.opts.budgetUSD, othersSpentUSD: this.spentUSD(`${namespace}/${name}`) } : undefined,
      now,
      jitter: Math.random(),
    };
    const result = reconcile(input);
    if (!unschedulable || !result.status.currentEpisode || result.status.phase !== 'Running') return result;
    const status: AgentTaskStatus = {
      ...result.status,
      currentEpisode: { ...result.status.currentEpisode, startedAt: prev.currentEpisode!.startedAt },
      phase: 'Waiting',
      reason: 'Unschedulable',
      message: unschedulable.message,
    };
    status.conditions = conditionsFor(status, generation, now.toISOString());
    return { status, actions: result.actions.filter((a) => a.type !== 'StopEpisode'), requeueAfterMs: undefined };
  }

  /** What the pods (or their absence) say about the newest episode. */
  private observe(key: string, task: KubeObject, status: AgentTaskStatus, pods: KubeObject[], now: Date): PodObservation | undefined {
    const current = status.currentEpisode;
    const override = this.overrides.get(key);
    if (override && current?.number === override.number) return { episode: override };
    const opts = { now, imagePullGraceMs: this.opts.imagePullGraceMs };
    let newest: KubeObject | undefined;
    for (const pod of pods) if ((podEpisode(pod) ?? 0) > (newest ? (podEpisode(newest) ?? 0) : 0)) newest = pod;
    const newestNumber = newest ? (podEpisode(newest) ?? 0) : 0;
    if (current && current.number > newestNumber) {
      const podKey = `${task.metadata.namespace}/${episodePodName(task.metadata.name, current.number)}`;
      const tomb = this.tombstones.get(podKey);
      const intent = this.stopIntents.get(podKey)?.intent;
      if (tomb || intent) return { episode: observeDeletedPod(current.number, { ...opts, stopIntent: intent }, tomb?.pod) };
      if (this.startPending.get(key) === current.number) return undefined;
      const result = episodeResult({
        exitCode: null,
        interrupted: true,
        message: `episode pod ${podKey} does not exist (the controller stopped before creating it)`,
      });
      return { episode: { number: current.number, state: 'finished', startedAt: current.startedAt, result } };
    }
    if (!newest) return undefined;
    return observePod(newest, { ...opts, stopIntent: this.stopIntents.get(objectKey(newest))?.intent });
  }

  private async startEpisode(key: string, task: KubeObject, spec: AgentTaskSpec, n: number, status: AgentTaskStatus, log: Logger): Promise<void> {
    const pod = buildEpisodePod({
      task: task as any,
      spec,
      episode: n,
      lastEpisodeMessage: status.lastEpisode?.message,
      defaults: this.opts.episodeDefaults,
    });
    const path = `/api/v1/namespaces/${task.metadata.namespace}/pods`;
    try {
      this.opts.pods.upsert(await this.opts.client.create(path, pod, 'work'));
      log.info({ episode: n, pod: pod.metadata.name }, 'episode pod created');
    } catch (err) {
      if (isStatus(err, 409)) {
        // Our deterministic name already exists: adopt it if it is ours, clear it away if it is a leftover.
        const existing: KubeObject = await this.opts.client.get(`${path}/${pod.metadata.name}`);
        if (ownerUid(existing) !== task.metadata.uid) {
          await this.deletePod(existing, 'cleanup', 'work');
          throw new KubeError(409, 'AlreadyExists', `pod ${pod.metadata.name} of an earlier task with this name is in the way; deleted it`);
        }
        this.opts.pods.upsert(existing);
        log.info({ episode: n, pod: pod.metadata.name }, 'adopted existing episode pod');
      } else if (isRefusal(err)) {
        const message = `the API server refused the episode pod: ${(err as KubeError).detail}`;
        log.warn({ episode: n, pod: pod.metadata.name, err: (err as Error).message }, 'episode pod refused');
        this.overrides.set(key, { number: n, state: 'finished', result: episodeResult({ exitCode: null, errorClass: 'fatal', message: message.slice(0, 1000) }) });
        this.opts.enqueueAfter(key, 0);
      } else {
        throw err;
      }
    }
    this.startPending.delete(key);
    if (!this.overrides.has(key)) notePodName(status, [pod as KubeObject]);
  }

  private async stopEpisode(task: KubeObject, pods: KubeObject[], n: number, reason: 'cancelled' | 'timeout', log: Logger): Promise<void> {
    const pod = pods.find((p) => podEpisode(p) === n);
    const podKey = `${task.metadata.namespace}/${episodePodName(task.metadata.name, n)}`;
    this.stopIntents.set(podKey, { intent: reason, at: Date.now() });
    if (pod) {
      log.info({ episode: n, pod: pod.metadata.name, reason }, 'stopping episode');
      await this.deletePod(pod, reason, 'work');
    }
    this.opts.enqueueAfter(objectKey(task), 0);
  }

  private async finalize(key: string, task: KubeObject, pods: KubeObject[]): Promise<void> {
    if (pods.length > 0) {
      this.opts.log.info({ namespace: task.metadata.namespace, task: task.metadata.name, pods: pods.length }, 'task deleted: deleting its episode pods');
    }
    await Promise.all(pods.map((pod) => this.deletePod(pod, 'cancelled', 'work')));
    if (hasFinalizer(task)) {
      const updated = await removeFinalizer(this.opts.client, task);
      if (updated) this.opts.tasks.upsert(updated);
    }
    this.forget(key);
  }

  /** Keep the newest --pod-retention finished pods whose episodes are on record; delete older ones. */
  private async pruneFinishedPods(pods: KubeObject[], server: AgentTaskStatus, status: AgentTaskStatus): Promise<void> {
    const recorded = server.lastEpisode?.number ?? 0;
    const finished = pods
      .filter((p) => (podEpisode(p) ?? 0) <= recorded && podEpisode(p) !== status.currentEpisode?.number)
      .filter((p) => isFinishedPod(p) && !p.metadata.deletionTimestamp)
      .sort((a, b) => (podEpisode(b) ?? 0) - (podEpisode(a) ?? 0));
    await Promise.all(finished.slice(this.opts.podRetention).map((pod) => this.deletePod(pod, 'cleanup', 'bookkeeping')));
  }

  /** Queued, then added a few at a time: a flood of new tasks must not pile up thousands of requests. */
  private ensureFinalizer(key: string): void {
    this.finalizerPending.add(key);
    this.pumpFinalizers();
  }

  private pumpFinalizers(): void {
    for (const key of this.finalizerPending) {
      if (this.finalizerActive >= FINALIZER_CONCURRENCY) return;
      this.finalizerPending.delete(key);
      this.finalizerActive++;
      void this.addFinalizerNow(key).finally(() => {
        this.finalizerActive--;
        this.pumpFinalizers();
      });
    }
  }

  private async addFinalizerNow(key: string): Promise<void> {
    const task = this.opts.tasks.get(key);
    if (!task || hasFinalizer(task) || task.metadata.deletionTimestamp) return;
    try {
      const updated = await addFinalizer(this.opts.client, task);
      if (updated) this.opts.tasks.upsert(updated);
    } catch (err) {
      this.opts.log.warn({ namespace: task.metadata.namespace, task: task.metadata.name, err: String(err) }, 'could not add finalizer; retrying');
      this.opts.enqueueAfter(key, 1_000);
    }
  }

  private async deletePod(pod: KubeObject, intent: StopIntent, lane: Lane): Promise<void> {
    const key = objectKey(pod);
    if (!this.stopIntents.has(key)) this.stopIntents.set(key, { intent, at: Date.now() });
    try {
      await this.opts.client.delete(
        `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`,
        { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background', preconditions: { uid: pod.metadata.uid } },
        lane,
      );
    } catch (err) {
      // Gone already, or a different pod now has the name: nothing of ours to delete.
      if (!isStatus(err, 404) && !isStatus(err, 409)) throw err;
    }
  }

  private forget(key: string): void {
    this.opts.statusWriter.forget(key);
    this.overrides.delete(key);
    this.startPending.delete(key);
    this.opts.setWaitingForSlot(key, false);
  }

  private phaseOf(key: string): Phase | undefined {
    const task = this.opts.tasks.get(key);
    if (!task) return undefined;
    return this.opts.statusWriter.effective(key, parseStatus(task.status)).phase ?? 'Pending';
  }

  private dependencyPhases(namespace: string, dependsOn: string[]): Record<string, Phase | undefined> {
    return Object.fromEntries(dependsOn.map((dep) => [dep, this.phaseOf(`${namespace}/${dep}`)]));
  }

  /** The dependsOn graph reachable from this task, read from the cache. */
  private cycle(namespace: string, name: string): string[] | undefined {
    const graph: Record<string, string[]> = {};
    const todo = [name];
    while (todo.length > 0 && Object.keys(graph).length < 10_000) {
      const node = todo.pop() as string;
      if (graph[node]) continue;
      const deps = this.opts.tasks.get(`${namespace}/${node}`)?.spec?.dependsOn;
      graph[node] = Array.isArray(deps) ? deps.filter((d): d is string => typeof d === 'string') : [];
      todo.push(...graph[node]);
    }
    return findCycle(name, graph);
  }

  /** What all other watched tasks spent (this task's own spend is in its status). */
  private spentUSD(except: string): number {
    let total = 0;
    for (const task of this.opts.tasks.list()) {
      const key = objectKey(task);
      if (key === except) continue;
      const cost = this.opts.statusWriter.pending(key)?.costUSD ?? task.status?.costUSD;
      if (typeof cost === 'number' && Number.isFinite(cost)) total += cost;
    }
    return total;
  }
}

/** status.currentEpisode.podName once its pod exists (created or adopted): a cluster detail, so not in reconcile(). */
function notePodName(status: AgentTaskStatus, pods: KubeObject[]): void {
  const current = status.currentEpisode;
  if (!current || current.podName) return;
  const pod = pods.find((p) => podEpisode(p) === current.number);
  if (pod) status.currentEpisode = { ...current, podName: pod.metadata.name };
}

function ownerUid(pod: KubeObject): string | undefined {
  return pod.metadata.ownerReferences?.find((o) => o.controller)?.uid;
}

/** Pod creates the API server will refuse again if retried: invalid specs and PodSecurity rejections. */
function isRefusal(err: unknown): boolean {
  if (!(err instanceof KubeError)) return false;
  return err.status === 400 || err.status === 422 || (err.status === 403 && /PodSecurity/i.test(err.message));
}
