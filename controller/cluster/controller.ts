// Cluster mode: informers on AgentTasks, episode Pods and AgentBudgets feed the one controller loop
// (core/controller.ts). With leader election only the lease holder runs the loop; standbys keep their
// caches warm so a take-over starts at once.
import { ClusterNamespaceCredentials } from '../sources/cluster/namespace-credentials.ts';
import { probeCredentials } from './credentials-facts.ts';
import { randomUUID } from 'node:crypto';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { GROUP, PLURAL } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { effectiveSpec } from '../api/steps.ts';
import { systemClock } from '../core/clock.ts';
import type { Controller } from '../core/controller.ts';
import type { ClusterTask } from '../core/ports.ts';
import { ClusterGatewayBinding } from '../executors/cluster/gateway-binding.ts';
import { PodEpisodeExecutor } from '../executors/cluster/pod-executor.ts';
import { proxyAllowOf } from '../executors/cluster/proxy-env.ts';
import type { SandboxProxy } from '../executors/cluster/sandbox-proxy.ts';
import type { HookServer } from '../forge/hook-server.ts';
import { CLUSTER_DEFAULTS } from '../kube/cluster-defaults.ts';
import { EventRecorder } from '../kube/events.ts';
import type { Informer } from '../kube/informer.ts';
import { KubeClient } from '../kube/kube-client.ts';
import { LeaderElector } from '../kube/leader-election.ts';
import type { CustomObject, Pod } from '../kube/objects.ts';
import { EpisodicMetrics } from '../metrics/metrics.ts';
import { startMetricsServer } from '../metrics/server.ts';
import type { RunningServer } from '../metrics/server.ts';
import { EpisodeRecordWriter } from '../sinks/cluster/episode-records.ts';
import type { KubeMailboxWatch } from '../sinks/cluster/mailbox-watch.ts';
import { KubeStatusSink } from '../sinks/cluster/status-sink.ts';
import { StatusWriter } from '../sinks/cluster/status-writer.ts';
import { AgentBudgetStore } from '../sources/cluster/agent-budget-store.ts';
import { AgentTaskSource } from '../sources/cluster/agent-task-source.ts';
import { ClusterTriggers, triggersPath } from '../sources/cluster/agent-triggers.ts';
import { budgetsPath, clusterInformers, crdInstalled } from './cluster-informers.ts';
import { clusterLoop } from './cluster-loop.ts';
import type { ClusterControllerOptions } from './controller-options.ts';
import { startClusterMergeQueue } from './merge-queue.ts';
import type { ClusterMergeQueue } from './merge-queue.ts';

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
    const informers = clusterInformers(opts, client, this.metrics, () => this.noTaskCrd());
    this.mailboxWatch = informers.mailboxWatch;
    this.tasks = informers.tasks;
    this.budgets = informers.budgets;
    this.triggers = informers.triggers;
    this.pods = informers.pods;
    this.budgetStore = new AgentBudgetStore({ budgets: this.budgets, client, log: opts.log });
    this.credentials = informers.credentials;
    this.namespaceCredentials = new ClusterNamespaceCredentials(this.credentials);
    this.triggerRunner = new ClusterTriggers({
      triggers: this.triggers,
      tasks: this.tasks,
      client,
      log: opts.log,
      counters: this.metrics.triggers,
    });
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
    this.budgetsInstalled = await this.probe(
      budgetsPath(this.opts.namespace),
      'the AgentBudget CRD is not installed (kubectl apply -f crds/episodic.dev_agentbudgets.yaml, or `episodic crd`); running without budgets',
    );
    if (this.budgetsInstalled) this.budgets.start();
    this.triggersInstalled = await this.probe(
      triggersPath(this.opts.namespace),
      'the AgentTrigger CRD is not installed (kubectl apply -f crds/episodic.dev_agenttriggers.yaml); running without triggers',
    );
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

  /** A CRD a `helm upgrade` may not have installed (it installs no new CRDs): missing is said once, not retried. */
  private async probe(path: string, missing: string): Promise<boolean> {
    const installed = await crdInstalled(this.client, path);
    if (!installed) this.opts.log.warn(missing);
    return installed;
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
    this.loop = clusterLoop({
      opts: this.opts,
      client: this.client,
      source: this.source,
      executor: this.executor,
      sink: this.sink,
      metrics: this.metrics,
      mailboxWatch: this.mailboxWatch,
      budgets: this.budgetsInstalled ? this.budgetStore : undefined,
      gateway: this.gateway,
      namespaceCredentials: this.credentialsWatched ? this.namespaceCredentials : undefined,
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
      triggers: this.triggersInstalled ? this.triggers : undefined,
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
