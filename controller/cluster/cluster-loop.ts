// The one controller loop (core/controller.ts) as a cluster runs it: AgentTasks in, episode pods out, and
// status, ops, spawns and mailboxes through the API server. Built by the leader once it leads.
import type { TaskOwner } from '../core/created-tasks.ts';
import { Controller } from '../core/controller.ts';
import { deletingOwnedTasks } from '../core/owned-tasks.ts';
import type { ClusterTask } from '../core/ports.ts';
import { SpawnLoop } from '../core/spawn-loop.ts';
import type { PodEpisodeExecutor } from '../executors/cluster/pod-executor.ts';
import type { ClusterGatewayBinding } from '../executors/cluster/gateway-binding.ts';
import { CLUSTER_DEFAULTS } from '../kube/cluster-defaults.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { EpisodicMetrics } from '../metrics/metrics.ts';
import { ClusterOpsApplier } from '../ops/cluster-ops.ts';
import { spawnAndSend } from '../ops/spawn-send.ts';
import { KubeMailboxes } from '../sinks/cluster/mailboxes.ts';
import type { KubeMailboxWatch } from '../sinks/cluster/mailbox-watch.ts';
import type { KubeStatusSink } from '../sinks/cluster/status-sink.ts';
import type { AgentBudgetStore } from '../sources/cluster/agent-budget-store.ts';
import type { AgentTaskSource } from '../sources/cluster/agent-task-source.ts';
import { KubeCreatedTasks } from '../sources/cluster/created-tasks.ts';
import type { ClusterNamespaceCredentials } from '../sources/cluster/namespace-credentials.ts';
import type { ClusterControllerOptions } from './controller-options.ts';
import { credentialsFacts } from './credentials-facts.ts';

export interface ClusterLoopParts {
  opts: ClusterControllerOptions;
  client: KubeClient;
  source: AgentTaskSource;
  executor: PodEpisodeExecutor;
  sink: KubeStatusSink;
  metrics: EpisodicMetrics;
  mailboxWatch: KubeMailboxWatch;
  /** Undefined when the AgentBudget CRD is not installed: tasks run without budgets. */
  budgets: AgentBudgetStore | undefined;
  gateway: ClusterGatewayBinding | undefined;
  /** Undefined when AgentCredentials cannot be watched (CRD missing, no RBAC): no namespace defaults. */
  namespaceCredentials: ClusterNamespaceCredentials | undefined;
}

/** The loop, not started. */
export function clusterLoop(p: ClusterLoopParts): Controller<ClusterTask> {
  const { opts, client } = p;
  return new Controller({
    source: deletingOwnedTasks(p.source, {
      created: new KubeCreatedTasks(client),
      mailboxes: new KubeMailboxes(client),
    }),
    executor: p.executor,
    sink: p.sink,
    logger: opts.log,
    maxConcurrent: opts.maxConcurrent ?? CLUSTER_DEFAULTS.maxConcurrent,
    budgetUSD: opts.budgetUSD,
    budgets: p.budgets,
    workers: opts.workers ?? CLUSTER_DEFAULTS.workers,
    metrics: p.metrics,
    ops: new ClusterOpsApplier(
      client,
      spawnAndSend<ClusterTask>({
        created: new KubeCreatedTasks(client),
        mailboxes: new KubeMailboxes(client),
        ownerOf: clusterOwner,
        tasks: p.source,
        statuses: p.sink,
        clock: opts.clock,
      }),
    ),
    spawn: new SpawnLoop({
      source: p.source,
      sink: p.sink,
      mailboxes: new KubeMailboxes(client),
      created: { store: new KubeCreatedTasks(client), ownerOf: clusterOwner },
    }),
    mailboxEvents: p.mailboxWatch,
    clock: opts.clock,
    ...credentialsFacts(p.gateway, p.namespaceCredentials),
  });
}

/** A cluster task as the owner of the tasks it creates: its uid goes into their ownerReference. */
function clusterOwner(t: ClusterTask): TaskOwner {
  return { kind: 'AgentTask', namespace: t.namespace, name: t.name, uid: t.object.metadata.uid };
}
