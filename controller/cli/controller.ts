// `episodic controller`: cluster mode. Watches AgentTasks and runs each episode as a Pod.
// Exit codes: 0 after SIGINT/SIGTERM, 1 when leadership is lost or startup fails, 2 invalid usage.
// @kubernetes/client-node and the cluster controller are imported only when this command runs: client-node
// is heavy to load, and `episodic run` and every episode pod's runner never need it (bench/README.md).
import type { Command } from 'commander';
import type { EpisodeDefaults } from '../kube/episode-defaults.ts';
import { CLUSTER_DEFAULTS } from '../kube/cluster-defaults.ts';
import { LEASE_NAME } from '../kube/leader-election.ts';
import { createLogger } from '../util/logger.ts';
import { parseNumberOption, UsageError } from './options.ts';

export interface ControllerCliOptions {
  kubeconfig?: string;
  namespace?: string;
  metricsAddr: string;
  healthAddr: string;
  leaderElect?: boolean;
  leaderElectionNamespace?: string;
  leaseDuration: string;
  renewDeadline: string;
  retryPeriod: string;
  maxConcurrent: string;
  budgetUsd?: string;
  podRetention: string;
  imagePullGrace: string;
  workers: string;
  kubeApiQps: string;
  kubeApiBurst: string;
  watchTimeout: string;
  watchWatchdog?: string;
  episodeDefaults?: string;
  logLevel: string;
  consoleListen?: string;
  hooksAddr?: string;
  gatewayAddr?: string;
  gatewayUrl?: string;
  sandboxProxyListen?: string;
}

export function registerController(program: Command): void {
  program
    .command('controller')
    .description('reconcile AgentTasks on a Kubernetes cluster: one Pod per episode')
    .option('--kubeconfig <path>', 'kubeconfig file (default $KUBECONFIG, then in-cluster, then ~/.kube/config)')
    .option('--namespace <ns>', 'watch only this namespace (default: all namespaces)')
    .option('--metrics-addr <host:port>', 'serve /metrics here ("" to disable)', CLUSTER_DEFAULTS.metricsAddr)
    .option('--health-addr <host:port>', 'serve /healthz and /readyz here ("" to disable)', CLUSTER_DEFAULTS.healthAddr)
    .option('--leader-elect', 'run as one of several replicas: only the holder of the Lease reconciles')
    .option(
      '--leader-election-namespace <ns>',
      `namespace of the "${LEASE_NAME}" Lease (default: own namespace, --namespace, or default)`,
    )
    .option(
      '--lease-duration <duration>',
      'how long a Lease is valid without renewal',
      formatDuration(CLUSTER_DEFAULTS.leaseDurationMs),
    )
    .option(
      '--renew-deadline <duration>',
      'the leader gives up if it cannot renew within this',
      formatDuration(CLUSTER_DEFAULTS.renewDeadlineMs),
    )
    .option(
      '--retry-period <duration>',
      'how often to try to acquire or renew the Lease',
      formatDuration(CLUSTER_DEFAULTS.retryPeriodMs),
    )
    .option(
      '--max-concurrent <n>',
      'episode pods running at once, across all tasks',
      String(CLUSTER_DEFAULTS.maxConcurrent),
    )
    .option('--budget-usd <usd>', 'stop starting episodes once all watched tasks together spent this much')
    .option(
      '--pod-retention <n>',
      'finished episode pods kept per task (older ones are deleted)',
      String(CLUSTER_DEFAULTS.podRetention),
    )
    .option(
      '--image-pull-grace <duration>',
      'how long an image pull may fail before the episode is fatal',
      formatDuration(CLUSTER_DEFAULTS.imagePullGraceMs),
    )
    .option('--workers <n>', 'tasks reconciled in parallel', String(CLUSTER_DEFAULTS.workers))
    .option(
      '--kube-api-qps <n>',
      'client-side limit on API requests per second (0: none)',
      String(CLUSTER_DEFAULTS.qps),
    )
    .option('--kube-api-burst <n>', 'requests allowed in a burst above --kube-api-qps', String(CLUSTER_DEFAULTS.burst))
    .option(
      '--watch-timeout <duration>',
      'server-side watch timeout; each watch picks a value in [t, 2t)',
      formatDuration(CLUSTER_DEFAULTS.watchTimeoutSeconds * 1000),
    )
    .option('--watch-watchdog <duration>', 'restart a watch silent for this long (default: 2 × watch-timeout + 30s)')
    .option(
      '--episode-defaults <file>',
      "YAML with defaults for episode pods (image, nodeSelector, env, ...); a task's spec wins",
    )
    .option('--log-level <level>', 'trace, debug, info, warn, error', 'info')
    .option(
      '--console-listen <host:port>',
      'serve the web console here, from the informer cache (beyond localhost needs EPISODIC_CONSOLE_TOKEN)',
    )
    .option(
      '--hooks-addr <host:port>',
      'serve POST /hooks/NAMESPACE/TRIGGER (signed forge webhooks for AgentTriggers); a bare port binds 127.0.0.1',
    )
    .option(
      '--gateway-addr <host:port>',
      'while leading, serve the model gateway for tasks with spec.agent.credentials; a bare port binds 127.0.0.1',
    )
    .option('--gateway-url <url>', "the gateway's URL as episode pods reach it (its Service); default its own address")
    .option(
      '--sandbox-proxy-listen <host:port>',
      `serve the CONNECT proxy of sandboxed pods' allowHosts here (credentials keyed by $${PROXY_KEY_ENV})`,
    )
    .action(async (opts: ControllerCliOptions) => {
      process.exitCode = await controllerCommand(opts);
    });
}

/** "90s", "2m", "500ms", "1h" or a bare number of seconds. */
export function parseDuration(flag: string, raw: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  if (!match) throw new UsageError(`${flag}: "${raw}" is not a duration (e.g. 500ms, 15s, 2m)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(match[1]) * unit;
}

/** A duration as parseDuration reads it, in its largest whole unit: 120000 → "2m". */
export function formatDuration(ms: number): string {
  const units: Array<[string, number]> = [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  for (const [unit, size] of units) if (ms > 0 && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

export async function controllerCommand(opts: ControllerCliOptions): Promise<number> {
  let settings: ReturnType<typeof parseSettings>;
  try {
    settings = parseSettings(opts);
  } catch (err) {
    console.error(`episodic controller: ${(err as Error).message}`);
    return 2;
  }
  let episodeDefaults: EpisodeDefaults | undefined;
  if (opts.episodeDefaults !== undefined) {
    const { EpisodeDefaultsError, loadEpisodeDefaults } = await import('../kube/episode-defaults.ts');
    try {
      episodeDefaults = await loadEpisodeDefaults(opts.episodeDefaults);
    } catch (err) {
      if (!(err instanceof EpisodeDefaultsError)) throw err;
      console.error(`episodic controller: --episode-defaults ${err.message}`);
      return 2;
    }
  }
  const log = createLogger({ level: opts.logLevel, name: 'episodic-controller' });
  const stop = new AbortController();
  const onSignal = (signal: string) => stop.abort(signal);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const { runCluster } = await import('../cluster/run-cluster.ts');
    const end = await runCluster({
      kubeconfig: opts.kubeconfig,
      log,
      namespace: opts.namespace,
      ...settings,
      episodeDefaults,
      metricsAddr: opts.metricsAddr || undefined,
      healthAddr: opts.healthAddr || undefined,
      leaderElection: opts.leaderElect ? { namespace: opts.leaderElectionNamespace, ...settings.lease } : undefined,
      stop: stop.signal,
      consoleListen: opts.consoleListen || undefined,
      hooksAddr: opts.hooksAddr || undefined,
      gateway: settings.gateway,
      sandboxProxy: settings.sandboxProxy,
    });
    return end === 'stopped' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    log.flush();
  }
}

const PROXY_KEY_ENV = 'EPISODIC_SANDBOX_PROXY_KEY';
const PROXY_KEY_MIN = 32;

/** --sandbox-proxy-listen and its key: the same key on every replica and across restarts, or pods are refused. */
export function sandboxProxySettings(
  listen: string | undefined,
  env: NodeJS.ProcessEnv,
): { listen: string; key: Buffer } | undefined {
  if (!listen) return undefined;
  const key = env[PROXY_KEY_ENV] ?? '';
  if (key.length < PROXY_KEY_MIN)
    throw new UsageError(
      `--sandbox-proxy-listen: set ${PROXY_KEY_ENV} to a secret of ${PROXY_KEY_MIN}+ characters (the chart makes one)`,
    );
  return { listen, key: Buffer.from(key) };
}

/** The numeric and duration flags, checked; a bad one throws a UsageError naming it. */
function parseSettings(opts: ControllerCliOptions) {
  const leaseDurationMs = parseDuration('--lease-duration', opts.leaseDuration);
  const renewDeadlineMs = parseDuration('--renew-deadline', opts.renewDeadline);
  if (renewDeadlineMs >= leaseDurationMs)
    throw new UsageError('--renew-deadline: must be shorter than --lease-duration');
  return {
    maxConcurrent: parseNumberOption('--max-concurrent', opts.maxConcurrent, { integer: true, min: 1 }),
    budgetUSD: opts.budgetUsd === undefined ? undefined : parseNumberOption('--budget-usd', opts.budgetUsd, { min: 0 }),
    podRetention: parseNumberOption('--pod-retention', opts.podRetention, { integer: true, min: 0 }),
    imagePullGraceMs: parseDuration('--image-pull-grace', opts.imagePullGrace),
    workers: parseNumberOption('--workers', opts.workers, { integer: true, min: 1 }),
    qps: parseNumberOption('--kube-api-qps', opts.kubeApiQps, { min: 0 }),
    burst: parseNumberOption('--kube-api-burst', opts.kubeApiBurst, { integer: true, min: 1 }),
    watchTimeoutSeconds: Math.max(1, Math.round(parseDuration('--watch-timeout', opts.watchTimeout) / 1000)),
    watchdogMs: opts.watchWatchdog === undefined ? undefined : parseDuration('--watch-watchdog', opts.watchWatchdog),
    lease: { leaseDurationMs, renewDeadlineMs, retryPeriodMs: parseDuration('--retry-period', opts.retryPeriod) },
    gateway: gatewaySettings(opts),
    sandboxProxy: sandboxProxySettings(opts.sandboxProxyListen, process.env),
  };
}

/** --gateway-addr and --gateway-url: the URL must be a plain http(s) base URL; it needs the address. */
function gatewaySettings(opts: ControllerCliOptions): { listen: string; url?: string } | undefined {
  if (!opts.gatewayAddr) {
    if (opts.gatewayUrl) throw new UsageError('--gateway-url: needs --gateway-addr (the gateway is off without it)');
    return undefined;
  }
  if (!/^(?:\[[0-9a-fA-F:.]+\]|[^:/\s]*)?:?\d+$/.test(opts.gatewayAddr.trim()))
    throw new UsageError(`--gateway-addr: "${opts.gatewayAddr}" is not HOST:PORT, :PORT or PORT`);
  if (opts.gatewayUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(opts.gatewayUrl);
    } catch {}
    if (!url || !/^https?:$/.test(url.protocol) || url.search || url.hash || url.username)
      throw new UsageError(`--gateway-url: "${opts.gatewayUrl}" is not a plain http(s) URL`);
  }
  return { listen: opts.gatewayAddr.trim(), url: opts.gatewayUrl };
}
