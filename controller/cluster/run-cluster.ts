// The composition of `episodic controller`: a kubeconfig, the cluster controller (informers, the loop,
// leader election, metrics) and its lifetime: until stopped, or until leadership is lost.
// The CLI parses the arguments and turns the end into an exit code.
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../kube/kube-config.ts';
import { readFileSync } from 'node:fs';
import { ClusterController } from './controller.ts';
import { CLUSTER_DEFAULTS } from '../kube/cluster-defaults.ts';
import type { ClusterControllerOptions } from './controller-options.ts';

export interface ClusterRunOptions extends Omit<ClusterControllerOptions, 'kubeConfig' | 'leaderElection'> {
  kubeconfig?: string;
  /** Leader election: its namespace defaults to the pod's own, then the watched one, then CLUSTER_DEFAULTS. */
  leaderElection?: Omit<NonNullable<ClusterControllerOptions['leaderElection']>, 'namespace'> & {
    namespace?: string;
  };
  /** Aborted on SIGINT/SIGTERM (its reason: the signal). */
  stop: AbortSignal;
  /** Serve the web console here, from the informer cache. */
  consoleListen?: string;
}

export type ClusterRunEnd = 'stopped' | 'lostLeadership' | 'noKubeconfig' | 'startFailed';

export async function runCluster(opts: ClusterRunOptions): Promise<ClusterRunEnd> {
  const { log } = opts;
  let kubeConfig: KubeConfig;
  try {
    kubeConfig = await loadKubeConfig(opts.kubeconfig);
    if (!kubeConfig.getCurrentCluster()) throw new Error('no current cluster in the kubeconfig');
  } catch (err) {
    log.error({ err: (err as Error).message }, 'cannot load a kubeconfig');
    return 'noKubeconfig';
  }
  let lost = false;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let controller: ClusterController;
  try {
    const le = opts.leaderElection;
    controller = await ClusterController.start({
      ...opts,
      kubeConfig,
      leaderElection: le && {
        ...le,
        namespace: le.namespace ?? inClusterNamespace() ?? opts.namespace ?? CLUSTER_DEFAULTS.leaseNamespace,
      },
      onLostLeadership: () => {
        if (!opts.stop.aborted) lost = true;
        finish();
      },
    });
  } catch (err) {
    log.error({ err: (err as Error).message }, 'controller failed to start');
    return 'startFailed';
  }
  logStarted(controller, opts);
  let consoleServer: { close(): Promise<void> } | undefined;
  try {
    consoleServer = opts.consoleListen ? await startClusterConsole(controller, opts) : undefined;
  } catch (err) {
    log.error({ err: (err as Error).message }, 'the console failed to start');
    await controller.stop();
    return 'startFailed';
  }
  const onStop = () => {
    log.info({ signal: opts.stop.reason }, 'shutting down');
    finish();
  };
  if (opts.stop.aborted) onStop();
  else opts.stop.addEventListener('abort', onStop, { once: true });
  await finished;
  const end = lost ? 'lostLeadership' : 'stopped';
  opts.stop.removeEventListener('abort', onStop);
  if (lost) log.error('leadership lost; exiting so a fresh start re-joins the election');
  await consoleServer?.close();
  await controller.stop();
  return end;
}

/** The console over the controller's informer caches (loaded only when asked for). */
async function startClusterConsole(controller: ClusterController, opts: ClusterRunOptions) {
  const { ClusterConsoleSource } = await import('../console/cluster-source.ts');
  const { startConsole } = await import('../console/server.ts');
  const { consoleUser } = await import('../console/start-local.ts');
  const { TOKEN_ENV } = await import('../console/security.ts');
  const token = process.env[TOKEN_ENV] || undefined;
  const source = new ClusterConsoleSource(controller);
  const running = await startConsole({
    listen: opts.consoleListen as string,
    source,
    token,
    who: consoleUser(!!token),
  });
  opts.log.info({ url: `${running.url}/` }, 'serving the console');
  return {
    close: async () => {
      await running.close();
      await source.close();
    },
  };
}

function logStarted(controller: ClusterController, opts: ClusterRunOptions): void {
  opts.log.info(
    {
      namespace: opts.namespace ?? '(all)',
      servers: controller.servers.map((s) => s.url),
      leaderElect: !!opts.leaderElection,
      identity: controller.identity,
    },
    'episodic controller started',
  );
}

/** The namespace this pod runs in (in-cluster), for the default lease namespace. */
export function inClusterNamespace(): string | undefined {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
