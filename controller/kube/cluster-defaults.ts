// The cluster controller's defaults, written once: `episodic controller`'s flags show and pass these, and
// ClusterController falls back to them when started without (tests, embedders).
import { RATE_LIMIT_DEFAULTS } from './kube-client.ts';
import { WATCH_TIMEOUT_SECONDS } from './informer.ts';
import { LEASE_DEFAULTS } from './leader-election.ts';

export const CLUSTER_DEFAULTS = {
  /** Episode pods running at once, across all tasks. */
  maxConcurrent: 10,
  /** Tasks reconciled in parallel. */
  workers: 16,
  /** Finished episode pods kept per task. */
  podRetention: 3,
  /** How long an image pull may fail before the episode is fatal. */
  imagePullGraceMs: 120_000,
  metricsAddr: ':8080',
  healthAddr: ':8081',
  /** The Lease's namespace when neither the flag, the pod's own namespace nor --namespace gives one. */
  leaseNamespace: 'default',
  ...LEASE_DEFAULTS,
  ...RATE_LIMIT_DEFAULTS,
  watchTimeoutSeconds: WATCH_TIMEOUT_SECONDS,
} as const;
