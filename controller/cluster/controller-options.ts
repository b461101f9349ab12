// What `episodic controller` is started with (the CLI's flags, tests' knobs): the cluster controller's options.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { EpisodeDefaults } from '../kube/episode-defaults.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';

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
