// Cluster mode: informers on AgentTasks, episode Pods and AgentBudgets feed the one controller loop
// (core/controller.ts). With leader election only the lease holder runs the loop; standbys keep their
// caches warm so a take-over starts at once.
import { CREDENTIALS_PLURAL } from '../api/agent-credentials.ts';
import { ClusterNamespaceCredentials, credentialsPath } from '../sources/cluster/namespace-credentials.ts';
import { credentialsFacts, probeCredentials } from './credentials-facts.ts';
import type { TaskOwner } from '../core/created-tasks.ts';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { GROUP, PLURAL, VERSION } from '../api/agent-task.ts';
import { BUDGET_PLURAL } from '../api/agent-budget.ts';
import { Controller } from '../core/controller.ts';
import { PodEpisodeExecutor } from '../executors/cluster/pod-executor.ts';
import { TASK_LABEL } from '../kube/names.ts';
import { EventRecorder } from '../kube/events.ts';
import { Informer } from '../kube/informer.ts';
import type { WatchRestartCause } from '../kube/informer.ts';
import type { CustomObject, KubeObject, Pod } from '../kube/objects.ts';
import { KubeClient, isStatus } from '../kube/kube-client.ts';
import { LeaderElector } from '../kube/leader-election.ts';
import { EpisodicMetrics } from '../metrics/metrics.ts';
import { startMetricsServer } from '../metrics/server.ts';
import type { RunningServer } from '../metrics/server.ts';
import { EpisodeRecordWriter } from '../sinks/cluster/episode-records.ts';
import { KubeStatusSink } from '../sinks/cluster/status-sink.ts';
import { StatusWriter } from '../sinks/cluster/status-writer.ts';
import { AgentBudgetStore } from '../sources/cluster/agent-budget-store.ts';
import { AgentTaskSource } from '../sources/cluster/agent-task-source.ts';
import { ClusterTriggers, triggersPath } from '../sources/cluster/agent-triggers.ts';
import { TRIGGER_PLURAL } from '../api/agent-trigger.ts';
import type { HookServer } from '../forge/hook-server.ts';
import { KubeCreatedTasks } from '../sources/cluster/created-tasks.ts';
import { deletingOwnedTasks } from '../core/owned-tasks.ts';
import { SpawnLoop } from '../core/spawn-loop.ts';
import type { ClusterTask } from '../core/ports.ts';
import { spawnAndSend } from '../ops/spawn-send.ts';
import { KubeMailboxes } from '../sinks/cluster/mailboxes.ts';
import { KubeMailboxWatch } from '../sinks/cluster/mailbox-watch.ts';
import type { Clock } from '../core/clock.ts';
import { CLUSTER_DEFAULTS } from '../kube/cluster-defaults.ts';
import type { EpisodeDefaults } from '../kube/episode-defaults.ts';
import { ClusterOpsApplier } from '../ops/cluster-ops.ts';
import { ClusterGatewayBinding } from '../executors/cluster/gateway-binding.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { effectiveSpec } from '../api/steps.ts';
import { proxyAllowOf } from '../executors/cluster/proxy-env.ts';
import type { SandboxProxy } from '../executors/cluster/sandbox-proxy.ts';
import { startClusterMergeQueue } from './merge-queue.ts';
import type { ClusterMergeQueue } from './merge-queue.ts';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../core/clock.ts';

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
  /** Serve POST /hooks/NAMESPACE/TRIGGER here (webhook triggers); a bare port binds 127.0.0.1. */
  hooksAddr?: string;
  /** spec.sandbox.allowHosts on a cluster: serve the CONNECT proxy here, credentials made with `key`. */
  sandboxProxy?: { listen: string; key: Buffer };
  leaderElection?: {
    namespace: string;
    identity?: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  watchTimeoutSeconds?: number;
  watchdogMs?: number;
  metrics?: EpisodicMetrics;
  /** Leadership was lost: the process should exit (the CLI does), since its view may be stale. */
  onLostLeadership?: () => void;
  /** The AgentTask API group (default episodic.dev). Tests: a group without a CRD, as on a fresh cluster. */
  taskGroup?: string;
  /** The loop's clock (requeues, backoff). Tests: a ManualClock, to show what happens without a timer. */
  clock?: Clock;
  /**
   * Serve the model gateway (tasks with spec.agent.credentials) while leading: `listen` HOST:PORT (a bare port
   * is 127.0.0.1), `url` what episode pods are given (the chart's Service), default the listener's own URL.
   */
  gateway?: { listen: string; url?: string };
  /** The controller's scratch directory (best-of-N's and the merge queues' clones); default TMPDIR/episodic-git. */
  gitDir?: string;
}

export class ClusterController {
  readonly client: KubeClient;
  readonly tasks: Informer<CustomObject>;
  readonly pods: Informer<Pod>;
  readonly budgets: Informer<CustomObject>;
  readonly triggers: Informer<CustomObject>;
  /** AgentCredentials: the namespace defaults (credentials-choice.ts); off when the CRD or the grant is missing. */
  readonly credentials: Informer<CustomObject>;
  private credentialsWatched = false;
  private readonly namespaceCredentials: ClusterNamespaceCredentials;
  /** Mailbox ConfigMaps: a message arriving wakes its task (not part of readiness: the resync still reads). */
  readonly mailboxWatch: KubeMailboxWatch;
  private readonly triggerRunner: ClusterTriggers;
  /** False when the AgentTrigger CRD is not installed: no triggers, everything else runs. */
  private triggersInstalled = true;
  readonly metrics: EpisodicMetrics;
  readonly identity: string;
  readonly statusWriter: StatusWriter;
  readonly records: EpisodeRecordWriter;
  readonly events: EventRecorder;
  readonly servers: RunningServer[] = [];
  /** --hooks-addr: webhook deliveries for AgentTriggers. */
  hooks: HookServer | undefined;
  /** sandboxProxy: the CONNECT proxy of sandboxed pods' allowHosts (its port, for tests). */
  sandboxProxy: SandboxProxy | undefined;
  private loop: Controller<ClusterTask> | undefined;
  private mergeQueue: ClusterMergeQueue | undefined;
  private elector: LeaderElector | undefined;
  private leaseClient: KubeClient | undefined;
  private readonly source: AgentTaskSource;
  private readonly executor: PodEpisodeExecutor;
  /** The model gateway, listening while this replica leads. */
  readonly gateway: ClusterGatewayBinding | undefined;
  private readonly sink: KubeStatusSink;
  private readonly budgetStore: AgentBudgetStore;
  /** False when the AgentBudget CRD is not installed (a `helm upgrade` installs no new CRDs): tasks run without budgets. */
  private budgetsInstalled = true;
  private stopped = false;
  /** Set once the AgentTask CRD was found missing (said once); the informer keeps retrying with backoff. */
  private taskCrdMissing = false;
  private readonly opts: ClusterControllerOptions;

  private constructor(opts: ClusterControllerOptions, client: KubeClient) {
    this.opts = opts;
    this.client = client;
    this.metrics = opts.metrics ?? new EpisodicMetrics();
    this.identity = opts.leaderElection?.identity ?? `${hostname()}_${randomUUID()}`;
    const ns = opts.namespace;
    const watchOptions = (resource: string) => ({
      client,
      watchTimeoutSeconds: opts.watchTimeoutSeconds,
      watchdogMs: opts.watchdogMs,
      onRestart: (cause: WatchRestartCause, err: unknown) => {
        this.metrics.watchRestarts.inc({ resource, cause });
        if (resource === 'agenttasks' && isStatus(err, 404)) return this.noTaskCrd();
        opts.log.warn({ resource, cause, err: String(err) }, 'watch restarted');
      },
    });
    const informer = <T extends KubeObject>(resource: string, path: string, labelSelector?: string) =>
      new Informer<T>({ ...watchOptions(resource), resource, path, labelSelector });
    this.mailboxWatch = new KubeMailboxWatch({ ...watchOptions('configmaps'), namespace: ns });
    const group = opts.taskGroup ?? GROUP;
    this.tasks = informer(
      'agenttasks',
      ns ? `/apis/${group}/${VERSION}/namespaces/${ns}/${PLURAL}` : `/apis/${group}/${VERSION}/${PLURAL}`,
    );
    this.budgets = informer(
      BUDGET_PLURAL,
      ns ? `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${BUDGET_PLURAL}` : `/apis/${GROUP}/${VERSION}/${BUDGET_PLURAL}`,
    );
    this.budgetStore = new AgentBudgetStore({ budgets: this.budgets, client, log: opts.log });
    this.triggers = informer(TRIGGER_PLURAL, triggersPath(ns));
    this.credentials = informer(CREDENTIALS_PLURAL, credentialsPath(ns));
    this.namespaceCredentials = new ClusterNamespaceCredentials(this.credentials);
    this.triggerRunner = new ClusterTriggers({
      triggers: this.triggers,
      tasks: this.tasks,
      client,
      log: opts.log,
      counters: this.metrics.triggers,
    });
    this.pods = informer('pods', ns ? `/api/v1/namespaces/${ns}/pods` : '/api/v1/pods', TASK_LABEL);
    this.statusWriter = new StatusWriter({
      client,
      tasks: this.tasks,
      log: opts.log,
      onWriteError: (key, err) => opts.log.warn({ key, err: String(err) }, 'status write failed'),
    });
    this.events = new EventRecorder({ client, identity: this.identity, log: opts.log });
    this.source = new AgentTaskSource({
      tasks: this.tasks,
      client,
      log: opts.log,
      episodeDefaults: opts.episodeDefaults,
    });
    const clock = opts.clock;
    this.gateway =
      opts.gateway &&
      new ClusterGatewayBinding({
        client,
        log: opts.log,
        metrics: this.metrics.gateway,
        clock,
        ...opts.gateway,
      });
    this.executor = new PodEpisodeExecutor({
      gateway: this.gateway,
      client,
      pods: this.pods,
      log: opts.log,
      podRetention: opts.podRetention ?? CLUSTER_DEFAULTS.podRetention,
      imagePullGraceMs: opts.imagePullGraceMs ?? CLUSTER_DEFAULTS.imagePullGraceMs,
      episodeDefaults: opts.episodeDefaults,
      proxyKey: opts.sandboxProxy?.key,
      gitDir: this.gitDir(),
    });
    this.records = new EpisodeRecordWriter({ client, tasks: this.tasks, log: opts.log });
    this.sink = new KubeStatusSink({
      tasks: this.tasks,
      writer: this.statusWriter,
      events: this.events,
      records: this.records,
      log: opts.log,
    });
  }

  static async start(opts: ClusterControllerOptions): Promise<ClusterController> {
    const client = await KubeClient.create(opts.kubeConfig, {
      qps: opts.qps,
      burst: opts.burst,
      requestTimeoutMs: opts.requestTimeoutMs,
    });
    const controller = new ClusterController(opts, client);
    await controller.run();
    return controller;
  }

  /** Informers synced: the caches reflect the cluster (readyz). */
  ready(): boolean {
    return (
      this.tasks.hasSynced() &&
      this.pods.hasSynced() &&
      (!this.budgetsInstalled || this.budgets.hasSynced()) &&
      (!this.triggersInstalled || this.triggers.hasSynced()) &&
      (!this.credentialsWatched || this.credentials.hasSynced())
    );
  }

  get isLeader(): boolean {
    return this.loop !== undefined;
  }

  async waitForSync(): Promise<void> {
    await Promise.all([
      this.tasks.waitForSync(),
      this.pods.waitForSync(),
      this.budgetsInstalled ? this.budgets.waitForSync() : undefined,
      this.triggersInstalled ? this.triggers.waitForSync() : undefined,
      this.credentialsWatched ? this.credentials.waitForSync() : undefined,
    ]);
  }

  /** Resolves when nothing is queued or being reconciled and every write went out (tests). */
  async idle(): Promise<void> {
    await this.loop?.idle();
    await this.statusWriter.drain();
    await this.events.drain();
    await this.records.drain();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopProcessing();
    await this.elector?.stop();
    // Give pending status writes and events a moment, but never hang shutdown on a dead API server.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([this.statusWriter.drain(), this.events.drain(), this.records.drain()]),
      new Promise((resolve) => (timer = setTimeout(resolve, 5_000))),
    ]);
    clearTimeout(timer);
    this.statusWriter.stop();
    this.records.stop();
    this.tasks.stop();
    this.pods.stop();
    this.budgets.stop();
    this.triggers.stop();
    this.credentials.stop();
    this.mailboxWatch.informer.stop();
    await Promise.all([...this.servers, ...(this.hooks ? [this.hooks] : [])].map((s) => s.close()));
    await this.gateway?.close();
    await this.sandboxProxy?.close();
    this.client.close();
    this.leaseClient?.close();
  }

  /** What a task's pods may CONNECT to now, from the informer cache (every replica answers alike). */
  private proxyAllowOf(t: { namespace: string; name: string }): readonly string[] | undefined {
    const task = this.source.get(`${t.namespace}/${t.name}`);
    if (!task?.spec) return undefined;
    return proxyAllowOf(effectiveSpec(task.spec, task.object.status as AgentTaskStatus | undefined));
  }

  private async run(): Promise<void> {
    const { metricsAddr, healthAddr } = this.opts;
    const addresses = [metricsAddr, healthAddr].filter((a): a is string => !!a);
    // The same fixed address twice means one server; port 0 twice means two servers on free ports.
    for (const address of addresses.filter((a, i) => addresses.indexOf(a) === i || /:0$|^0$/.test(a))) {
      this.servers.push(await startMetricsServer({ address, metrics: this.metrics, ready: () => this.ready() }));
    }
    if (this.opts.hooksAddr) {
      const { serveTriggerHooks } = await import('../sources/triggers/trigger-hooks.ts');
      this.hooks = await serveTriggerHooks(this.opts.hooksAddr, this.triggerRunner.hookOptions());
    }
    if (this.opts.sandboxProxy) {
      const { serveSandboxProxy } = await import('../executors/cluster/sandbox-proxy.ts');
      this.sandboxProxy = await serveSandboxProxy({
        ...this.opts.sandboxProxy,
        allowOf: (t) => this.proxyAllowOf(t),
        log: this.opts.log,
      });
    }
    this.tasks.start();
    this.pods.start();
    this.mailboxWatch.informer.start();
    await this.probeBudgets();
    if (this.budgetsInstalled) this.budgets.start();
    this.triggersInstalled = await this.probeTriggers();
    if (this.triggersInstalled) this.triggers.start();
    // Watched with or without the gateway: without it a task on a namespace default fails, saying why.
    this.credentialsWatched = await probeCredentials(this.client, this.opts.namespace, this.opts.log);
    if (this.credentialsWatched) this.credentials.start();
    const le = this.opts.leaderElection;
    if (!le) {
      // Not awaited: an unreachable API server must not hang startup; /readyz tells when we are synced.
      void this.waitForSync().then(() => this.lead());
      return;
    }
    // Its own client: lease renewals must never wait behind a flood of pod creates in the QPS limiter.
    this.leaseClient = await KubeClient.create(this.opts.kubeConfig, {
      qps: 0,
      requestTimeoutMs: this.opts.leaderElection?.renewDeadlineMs,
    });
    this.elector = new LeaderElector({
      client: this.leaseClient,
      namespace: le.namespace,
      identity: this.identity,
      leaseDurationMs: le.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs,
      log: this.opts.log,
      onStartedLeading: () => void this.waitForSync().then(() => (this.elector?.isLeader ? this.lead() : undefined)),
      onStoppedLeading: () => {
        // Another replica may lead already: write nothing more, and do not campaign again with a
        // view that may be stale (the CLI exits; a fresh process re-joins the election).
        this.stopProcessing();
        this.statusWriter.stop();
        this.records.stop();
        void this.elector?.stop();
        this.opts.onLostLeadership?.();
      },
    });
    this.elector.start();
  }

  /**
   * The AgentTask list answered 404 (the apiserver's bare "404 page not found"): the CRD is not installed.
   * Said once, in words; the informer retries with backoff (at most 30 s apart) and the controller starts
   * when the CRD appears. /readyz stays false meanwhile.
   */
  private noTaskCrd(): void {
    if (this.taskCrdMissing) return;
    this.taskCrdMissing = true;
    const crd = `${PLURAL}.${this.opts.taskGroup ?? GROUP}`;
    this.opts.log.error(
      `CRD ${crd} is not installed; install it with \`kubectl apply -f crds/\` (or \`episodic crd | kubectl apply -f -\`; \`helm install\` installs it). Waiting for it`,
    );
    void this.tasks.waitForSync().then(() => {
      if (!this.stopped) this.opts.log.info(`CRD ${crd} is installed now; starting`);
    });
  }

  /** One list of at most one AgentBudget: a 404 means the CRD is missing, which is said once and not retried. */
  private async probeBudgets(): Promise<void> {
    const ns = this.opts.namespace;
    const path = ns
      ? `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${BUDGET_PLURAL}`
      : `/apis/${GROUP}/${VERSION}/${BUDGET_PLURAL}`;
    try {
      await this.client.get(path, { limit: 1 });
    } catch (err) {
      if (!isStatus(err, 404)) return; // unreachable or slow: the informer retries as for any other kind
      this.budgetsInstalled = false;
      this.opts.log.warn(
        'the AgentBudget CRD is not installed (kubectl apply -f crds/episodic.dev_agentbudgets.yaml, or `episodic crd`); running without budgets',
      );
    }
  }

  /** Like probeBudgets: a 404 means the AgentTrigger CRD is missing; said once, and triggers stay off. */
  private async probeTriggers(): Promise<boolean> {
    try {
      await this.client.get(triggersPath(this.opts.namespace), { limit: 1 });
    } catch (err) {
      if (!isStatus(err, 404)) return true;
      this.opts.log.warn(
        'the AgentTrigger CRD is not installed (kubectl apply -f crds/episodic.dev_agenttriggers.yaml); running without triggers',
      );
      return false;
    }
    return true;
  }

  /** The leader serves the gateway before it reconciles: a pod it starts must find it listening. */
  private async lead(): Promise<void> {
    try {
      await this.gateway?.start();
    } catch (err) {
      // Tasks without credentials still run; those with them fail to start, saying why.
      this.opts.log.error({ err: (err as Error).message }, 'the model gateway failed to start');
    }
    this.startProcessing();
  }

  private startProcessing(): void {
    if (this.loop || this.stopped) return;
    this.loop = new Controller({
      source: deletingOwnedTasks(this.source, {
        created: new KubeCreatedTasks(this.client),
        mailboxes: new KubeMailboxes(this.client),
      }),
      executor: this.executor,
      sink: this.sink,
      logger: this.opts.log,
      maxConcurrent: this.opts.maxConcurrent ?? CLUSTER_DEFAULTS.maxConcurrent,
      budgetUSD: this.opts.budgetUSD,
      budgets: this.budgetsInstalled ? this.budgetStore : undefined,
      workers: this.opts.workers ?? CLUSTER_DEFAULTS.workers,
      metrics: this.metrics,
      ops: new ClusterOpsApplier(
        this.client,
        spawnAndSend<ClusterTask>({
          created: new KubeCreatedTasks(this.client),
          mailboxes: new KubeMailboxes(this.client),
          ownerOf: clusterOwner,
          tasks: this.source,
          statuses: this.sink,
          clock: this.opts.clock,
        }),
      ),
      spawn: new SpawnLoop({
        source: this.source,
        sink: this.sink,
        mailboxes: new KubeMailboxes(this.client),
        created: { store: new KubeCreatedTasks(this.client), ownerOf: clusterOwner },
      }),
      mailboxEvents: this.mailboxWatch,
      clock: this.opts.clock,
      ...credentialsFacts(this.gateway, this.credentialsWatched ? this.namespaceCredentials : undefined),
    });
    this.opts.log.info(
      { tasks: this.tasks.size, pods: this.pods.size, identity: this.identity },
      'caches synced; reconciling',
    );
    // Every task, plus the task of every pod (a pod whose task is gone is an orphan to delete).
    this.loop.start();
    this.mergeQueue = startClusterMergeQueue({
      client: this.client,
      namespace: this.opts.namespace,
      dir: this.gitDir(),
      loop: this.loop,
      source: this.source,
      sink: this.sink,
      writer: this.statusWriter,
      executor: this.executor,
      log: this.opts.log,
      clock: this.opts.clock ?? systemClock,
      metrics: this.metrics.mergeQueue,
    });
    if (this.triggersInstalled) this.triggerRunner.start();
  }

  private gitDir(): string {
    return this.opts.gitDir ?? path.join(tmpdir(), 'episodic-git');
  }

  private stopProcessing(): void {
    this.triggerRunner.stop();
    this.mergeQueue?.halt();
    this.loop?.halt();
    this.loop = undefined;
  }
}

/** The namespace this pod runs in (in-cluster), for the default lease namespace. */
export function inClusterNamespace(): string | undefined {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A cluster task as the owner of the tasks it creates: its uid goes into their ownerReference. */
function clusterOwner(t: ClusterTask): TaskOwner {
  return { kind: 'AgentTask', namespace: t.namespace, name: t.name, uid: t.object.metadata.uid };
}
