// What the cluster loop knows of AgentCredentials: each namespace's (a task's default, from an informer), a
// pool all paused (the gateway's), and the changes that wake the tasks that may use them. The informer runs
// with or without the gateway: without one, a task relying on its namespace default fails to start, saying
// the default needs the gateway, instead of its agent running without credentials.
import type { Logger } from 'pino';
import { gatewayCredentials } from '../api/agent-credentials.ts';
import type { ClusterTask } from '../core/ports.ts';
import type { ClusterGatewayBinding } from '../executors/cluster/gateway-binding.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { isStatus } from '../kube/kube-client.ts';
import type { ClusterNamespaceCredentials } from '../sources/cluster/namespace-credentials.ts';
import { credentialsPath } from '../sources/cluster/namespace-credentials.ts';

type Listener = (namespace: string, name: string) => void;

/** The loop's credentials facts: the namespace's AgentCredentials when watched, pauses only with the gateway. */
export function credentialsFacts(
  gateway: ClusterGatewayBinding | undefined,
  inNamespace: ClusterNamespaceCredentials | undefined,
) {
  return {
    ...(inNamespace && { namespaceCredentials: (namespace: string) => inNamespace.inNamespace(namespace) }),
    ...(gateway && {
      credentialsPaused: async (task: ClusterTask) => {
        const credentials = task.spec && gatewayCredentials(task.spec);
        const until = credentials ? await gateway.pausedUntil(task.namespace, credentials) : undefined;
        return credentials && until ? { credentials, until } : undefined;
      },
    }),
    credentialEvents: {
      subscribe: (fn: Listener) => {
        gateway?.pauses.subscribe(fn);
        inNamespace?.changes.subscribe(fn);
      },
    },
  };
}

/**
 * One list of at most one AgentCredentials: watched unless its CRD is missing (404) or the controller may not
 * list them (403, an install older than the chart's grant); either is said once, with what it means.
 */
export async function probeCredentials(
  client: KubeClient,
  namespace: string | undefined,
  log: Logger,
): Promise<boolean> {
  try {
    await client.get(credentialsPath(namespace), { limit: 1 });
    return true;
  } catch (err) {
    const missing = isStatus(err, 404);
    if (!missing && !isStatus(err, 403)) return true; // unreachable or slow: the informer retries
    const why = missing
      ? 'the AgentCredentials CRD is not installed'
      : 'this controller may not list AgentCredentials (RBAC)';
    log.warn(
      `${why}: namespace default AgentCredentials are not seen; a task uses the gateway only by spec.agent.credentials`,
    );
    return false;
  }
}
