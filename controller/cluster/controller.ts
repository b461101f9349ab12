// The cluster controller: informers on AgentTasks and episode Pods feed a keyed work queue; each key is
// reconciled by TaskReconciler. With leader election only the lease holder runs the queue; standbys
// keep their caches warm so a take-over starts at once.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { GROUP, PLURAL, PHASES, VERSION } from '../api/agent-task.ts';
import type { Phase } from '../api/agent-task.ts';
import { EpisodicMetrics } from '../metrics/metrics.ts';
import { startMetricsServer } from '../metrics/server.ts';
import type { RunningServer } from '../metrics/server.ts';
import { WorkQueue } from '../core/work-queue.ts';
import type { EpisodeDefaults } from './episode-defaults.ts';
import { TASK_LABEL } from './episode-pod.ts';
import { EpisodeSlots } from './episode-slots.ts';
import { EventRecorder } from './events.ts';
import { Informer, objectKey } from './informer.ts';
import type { KubeObject } from './informer.ts';
import { KubeClient } from './kube-client.ts';
import { LeaderElector } from './leader-election.ts';
import { StatusWriter } from './status-writer.ts';
import { TaskReconciler } from './task-reconciler.ts';

export interface ClusterControllerOptions {
  kubeConfig: KubeConfig;
  log: Logger;
  /** Watch one namespace; all when undefined. */
  namespace?: string;
  maxConcurrent?: number;
  budgetUSD?: number;
  podRetention?: number;
  imagePullGraceMs?: number;
  /** --episode-defaults: pod settings for what a task's spec leaves unset. */
  episodeDefaults?: EpisodeDefaults;
  workers?: number;
  qps?: number;
  burst?: number;
  requestTimeoutMs?: number;
  /** "host:port"; undefined serves nothing. Equal addresses share one server. */
  metricsAddr?: string;
  healthAddr?: string;
  leaderElection?: {
    namespace: string;
    identity?: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  watchTimeoutSeconds?: number;
  watchdogMs?: number;
  /** How often the episodic_tasks gauge is recounted from the cache. */
  phaseGaugeIntervalMs?: number;
  metrics?: EpisodicMetrics;
  /** Leadership was lost: the process should exit (the CLI does), since its view may be stale. */
  onLostLeadership?: () => void;
}

export class ClusterController {
  readonly client: KubeClient;
  readonly tasks: Informer<KubeObject>;
  readonly pods: Informer<KubeObject>;
  readonly metrics: EpisodicMetrics;
  readonly identity: string;
  readonly statusWriter: StatusWriter;
  readonly events: EventRecorder;
  readonly servers: RunningServer[] = [];
  private queue: WorkQueue | undefined;
  private elector: LeaderElector | undefined;
  private leaseClient: KubeClient | undefined;
  private readonly reconciler: TaskReconciler;
  private readonly slots: EpisodeSlots;
  private readonly waitingForSlot = new Set<string>();
  private readonly dependents = new Map<string, Set<string>>();
  private phaseTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly opts: ClusterControllerOptions;

  private constructor(opts: ClusterControllerOptions, client: KubeClient) {
    this.opts = opts;
    this.client = client;
    this.metrics = opts.metrics ?? new EpisodicMetrics();
    this.identity = opts.leaderElection?.identity ?? `${hostname()}_${randomUUID()}`;
    const ns = opts.namespace;
    const informer = (resource: string, path: string, labelSelector?: string) =>
      new Informer<KubeObject>({
        client,
        resource,
        path,
        labelSelector,
        watchTimeoutSeconds: opts.watchTimeoutSeconds,
        watchdogMs: opts.watchdogMs,
        onRestart: (cause, err) => {
          this.metrics.watchRestarts.inc({ resource, cause });
          opts.log.warn({ resource, cause, err: String(err) }, 'watch restarted');
        },
      });
    this.tasks = informer('agenttasks', ns ? `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}` : `/apis/${GROUP}/${VERSION}/${PLURAL}`);
    this.pods = informer('pods', ns ? `/api/v1/namespaces/${ns}/pods` : '/api/v1/pods', TASK_LABEL);
    this.pods.addIndex('task', (pod) => {
      const task = pod.metadata.labels?.[TASK_LABEL];
      return task ? [`${pod.metadata.namespace}/${task}`] : [];
    });
    this.slots = new EpisodeSlots(opts.maxConcurrent ?? 10, () => this.wakeWaiters());
    this.statusWriter = new StatusWriter({
      client,
      tasks: this.tasks,
      log: opts.log,
      onWriteError: (key, err) => opts.log.warn({ ...keyFields(key), err: String(err) }, 'status write failed'),
    });
    this.events = new EventRecorder({ client, identity: this.identity, log: opts.log });
    this.reconciler = new TaskReconciler({
      client,
      tasks: this.tasks,
      pods: this.pods,
      statusWriter: this.statusWriter,
      events: this.events,
      slots: this.slots,
      metrics: this.metrics,
      log: opts.log,
      budgetUSD: opts.budgetUSD,
      podRetention: opts.podRetention ?? 3,
      imagePullGraceMs: opts.imagePullGraceMs ?? 120_000,
      episodeDefaults: opts.episodeDefaults,
      enqueueAfter: (key, ms) => this.queue?.addAfter(key, ms),
      setWaitingForSlot: (key, waiting) => (waiting ? this.waitingForSlot.add(key) : this.waitingForSlot.delete(key)),
      onPhaseChange: (key) => this.enqueueDependents(key),
    });
    this.wireInformers();
  }

  static async start(opts: ClusterControllerOptions): Promise<ClusterController> {
    const client = await KubeClient.create(opts.kubeConfig, { qps: opts.qps, burst: opts.burst, requestTimeoutMs: opts.requestTimeoutMs });
    const controller = new ClusterController(opts, client);
    await controller.run();
    return controller;
  }

  /** Informers synced: the caches reflect the cluster (readyz). */
  ready(): boolean {
    return this.tasks.hasSynced() && this.pods.hasSynced();
  }

  get isLeader(): boolean {
    return this.queue !== undefined;
  }

  async waitForSync(): Promise<void> {
    await Promise.all([this.tasks.waitForSync(), this.pods.waitForSync()]);
  }

  /** Resolves when nothing is queued or being reconciled and every write went out (tests). */
  async idle(): Promise<void> {
    await this.queue?.idle();
    await this.statusWriter.drain();
    await this.events.drain();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.phaseTimer);
    this.stopProcessing();
    await this.elector?.stop();
    // Give pending status writes and events a moment, but never hang shutdown on a dead API server.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([this.statusWriter.drain(), this.events.drain()]),
      new Promise((resolve) => (timer = setTimeout(resolve, 5_000))),
    ]);
    clearTimeout(timer);
    this.statusWriter.stop();
    this.tasks.stop();
    this.pods.stop();
    await Promise.all(this.servers.map((s) => s.close()));
    this.client.close();
    this.leaseClient?.close();
  }

  private async run(): Promise<void> {
    const { metricsAddr, healthAddr } = this.opts;
    const addresses = [metricsAddr, healthAddr].filter((a): a is string => !!a);
    // The same fixed address twice means one server; port 0 twice means two servers on free ports.
    for (const address of addresses.filter((a, i) => addresses.indexOf(a) === i || /:0$|^0$/.test(a))) {
      this.servers.push(await startMetricsServer({ address, metrics: this.metrics, ready: () => this.ready() }));
    }
    this.tasks.start();
    this.pods.start();
    this.phaseTimer = setInterval(() => this.updatePhaseGauge(), this.opts.phaseGaugeIntervalMs ?? 5_000);
    this.phaseTimer.unref();
    const le = this.opts.leaderElection;
    if (!le) {
      // Not awaited: an unreachable API server must not hang startup; /readyz tells when we are synced.
      void this.waitForSync().then(() => this.startProcessing());
      return;
    }
    // Its own client: lease renewals must never wait behind a flood of pod creates in the QPS limiter.
    this.leaseClient = await KubeClient.create(this.opts.kubeConfig, { qps: 0, requestTimeoutMs: this.opts.leaderElection?.renewDeadlineMs });
    this.elector = new LeaderElector({
      client: this.leaseClient,
      namespace: le.namespace,
      identity: this.identity,
      leaseDurationMs: le.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs,
      log: this.opts.log,
      onStartedLeading: () => void this.waitForSync().then(() => this.elector?.isLeader && this.startProcessing()),
      onStoppedLeading: () => {
        // Another replica may lead already: write nothing more, and do not campaign again with a
        // view that may be stale (the CLI exits; a fresh process re-joins the election).
        this.stopProcessing();
        this.statusWriter.stop();
        void this.elector?.stop();
        this.opts.onLostLeadership?.();
      },
    });
    this.elector.start();
  }

  private startProcessing(): void {
    if (this.queue || this.stopped) return;
    this.queue = new WorkQueue((key) => this.reconcileKey(key), {
      concurrency: this.opts.workers ?? 16,
      onError: (key, err) => {
        this.metrics.reconcileErrors.inc();
        this.opts.log.warn({ ...keyFields(key), err: String(err) }, 'reconcile failed; retrying with backoff');
      },
    });
    this.opts.log.info({ tasks: this.tasks.size, pods: this.pods.size, identity: this.identity }, 'caches synced; reconciling');
    // Every task, plus the task of every pod (a pod whose task is gone is an orphan to delete).
    for (const task of this.tasks.list()) this.queue.add(objectKey(task));
    for (const pod of this.pods.list()) this.enqueuePodOwner(pod);
  }

  private stopProcessing(): void {
    this.queue?.stop();
    this.queue = undefined;
  }

  private async reconcileKey(key: string): Promise<void> {
    await this.reconciler.reconcile(key);
    this.queue?.forget(key);
  }

  private wireInformers(): void {
    this.tasks.on({
      add: (task) => {
        this.indexDependsOn(undefined, task);
        this.queue?.add(objectKey(task));
      },
      update: (old, task) => {
        this.indexDependsOn(old, task);
        this.queue?.add(objectKey(task));
        if (old.status?.phase !== task.status?.phase) this.enqueueDependents(objectKey(task));
      },
      delete: (task) => {
        this.indexDependsOn(task, undefined);
        this.queue?.add(objectKey(task));
        this.enqueueDependents(objectKey(task));
      },
    });
    this.pods.on({
      add: (pod) => {
        this.slots.observe(pod);
        this.enqueuePodOwner(pod);
      },
      update: (_old, pod) => {
        this.slots.observe(pod);
        this.enqueuePodOwner(pod);
      },
      delete: (pod) => {
        this.slots.observe(pod, true);
        this.reconciler.podDeleted(pod);
        this.enqueuePodOwner(pod);
      },
    });
  }

  private enqueuePodOwner(pod: KubeObject): void {
    const task = pod.metadata.labels?.[TASK_LABEL];
    if (task) this.queue?.add(`${pod.metadata.namespace}/${task}`);
  }

  /** A slot came free: wake as many queued tasks as there are free slots, oldest first. */
  private wakeWaiters(): void {
    let free = this.slots.free();
    for (const key of this.waitingForSlot) {
      if (free-- <= 0) break;
      this.waitingForSlot.delete(key);
      this.queue?.add(key);
    }
  }

  private indexDependsOn(old: KubeObject | undefined, task: KubeObject | undefined): void {
    const deps = (t: KubeObject | undefined) =>
      t && Array.isArray(t.spec?.dependsOn) ? (t.spec.dependsOn as unknown[]).filter((d): d is string => typeof d === 'string') : [];
    for (const dep of deps(old)) this.dependents.get(`${old!.metadata.namespace}/${dep}`)?.delete(objectKey(old!));
    for (const dep of deps(task)) {
      const key = `${task!.metadata.namespace}/${dep}`;
      let set = this.dependents.get(key);
      if (!set) this.dependents.set(key, (set = new Set()));
      set.add(objectKey(task!));
    }
  }

  private enqueueDependents(key: string): void {
    for (const dependent of this.dependents.get(key) ?? []) this.queue?.add(dependent);
  }

  private updatePhaseGauge(): void {
    const counts = new Map<string, Map<Phase, number>>();
    for (const task of this.tasks.list()) {
      const ns = task.metadata.namespace as string;
      const raw = this.statusWriter.pending(objectKey(task))?.phase ?? task.status?.phase ?? 'Pending';
      const phase: Phase = (PHASES as readonly string[]).includes(raw) ? raw : 'Pending';
      let byPhase = counts.get(ns);
      if (!byPhase) counts.set(ns, (byPhase = new Map()));
      byPhase.set(phase, (byPhase.get(phase) ?? 0) + 1);
    }
    this.metrics.setPhaseCounts(counts);
  }
}

/** Log fields of a work queue key: every line about a task names its namespace and task. */
function keyFields(key: string): { namespace: string; task: string } {
  const [namespace, task] = key.split('/') as [string, string];
  return { namespace, task };
}

/** The namespace this pod runs in (in-cluster), for the default lease namespace. */
export function inClusterNamespace(): string | undefined {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
