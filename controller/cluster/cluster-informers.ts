// The cluster controller's caches: one informer per watched kind (AgentTasks, episode Pods, AgentBudgets,
// AgentTriggers, AgentCredentials, mailbox ConfigMaps), each restarting its own watch; and the probe that finds a CRD missing.
import { GROUP, PLURAL, VERSION } from '../api/agent-task.ts';
import { BUDGET_PLURAL } from '../api/agent-budget.ts';
import { TRIGGER_PLURAL } from '../api/agent-trigger.ts';
import { CREDENTIALS_PLURAL } from '../api/agent-credentials.ts';
import { TASK_LABEL } from '../kube/names.ts';
import { Informer } from '../kube/informer.ts';
import type { WatchRestartCause } from '../kube/informer.ts';
import type { CustomObject, KubeObject, Pod } from '../kube/objects.ts';
import { isStatus } from '../kube/kube-client.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import { triggersPath } from '../sources/cluster/agent-triggers.ts';
import { credentialsPath } from '../sources/cluster/namespace-credentials.ts';
import { KubeMailboxWatch } from '../sinks/cluster/mailbox-watch.ts';
import type { ClusterControllerOptions } from './controller-options.ts';

export interface ClusterInformers {
  tasks: Informer<CustomObject>;
  pods: Informer<Pod>;
  budgets: Informer<CustomObject>;
  triggers: Informer<CustomObject>;
  credentials: Informer<CustomObject>;
  mailboxWatch: KubeMailboxWatch;
}

/** The informers, not started; a 404 on the AgentTask watch calls `noTaskCrd` instead of a warning. */
export function clusterInformers(
  opts: ClusterControllerOptions,
  client: KubeClient,
  metrics: EpisodicMetrics,
  noTaskCrd: () => void,
): ClusterInformers {
  const ns = opts.namespace;
  const watchOptions = (resource: string) => ({
    client,
    watchTimeoutSeconds: opts.watchTimeoutSeconds,
    watchdogMs: opts.watchdogMs,
    onRestart: (cause: WatchRestartCause, err: unknown) => {
      metrics.watchRestarts.inc({ resource, cause });
      if (resource === 'agenttasks' && isStatus(err, 404)) return noTaskCrd();
      opts.log.warn({ resource, cause, err: String(err) }, 'watch restarted');
    },
  });
  const informer = <T extends KubeObject>(resource: string, path: string, labelSelector?: string) =>
    new Informer<T>({ ...watchOptions(resource), resource, path, labelSelector });
  const group = opts.taskGroup ?? GROUP;
  return {
    mailboxWatch: new KubeMailboxWatch({ ...watchOptions('configmaps'), namespace: ns }),
    tasks: informer(
      'agenttasks',
      ns ? `/apis/${group}/${VERSION}/namespaces/${ns}/${PLURAL}` : `/apis/${group}/${VERSION}/${PLURAL}`,
    ),
    budgets: informer(BUDGET_PLURAL, budgetsPath(ns)),
    triggers: informer(TRIGGER_PLURAL, triggersPath(ns)),
    credentials: informer(CREDENTIALS_PLURAL, credentialsPath(ns)),
    pods: informer('pods', ns ? `/api/v1/namespaces/${ns}/pods` : '/api/v1/pods', TASK_LABEL),
  };
}

/** The AgentBudgets of one namespace, or of all. */
export function budgetsPath(ns: string | undefined): string {
  return ns
    ? `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${BUDGET_PLURAL}`
    : `/apis/${GROUP}/${VERSION}/${BUDGET_PLURAL}`;
}

/**
 * One list of at most one object: false when it answers 404 (the kind's CRD is not installed). Unreachable or
 * slow counts as installed: the informer retries as for any other kind.
 */
export async function crdInstalled(client: KubeClient, path: string): Promise<boolean> {
  try {
    await client.get(path, { limit: 1 });
  } catch (err) {
    if (isStatus(err, 404)) return false;
  }
  return true;
}
