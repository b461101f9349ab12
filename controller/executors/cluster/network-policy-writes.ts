// A sandboxed task's NetworkPolicy (network-policy.ts builds it) written to and deleted from the API server.
import type { Logger } from 'pino';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import { podMountsProblem } from '../../api/sandbox.ts';
import type { Sandbox } from '../../api/sandbox.ts';
import type { ClusterTask } from '../../core/ports.ts';
import type { EpisodeDefaults } from '../../kube/episode-defaults.ts';
import { isStatus } from '../../kube/kube-client.ts';
import type { KubeClient } from '../../kube/kube-client.ts';
import { buildNetworkPolicy, enforceProblem, networkPolicyName } from './network-policy.ts';
import { proxyAllowOf } from './proxy-env.ts';

/** Why a pod of this spec may not run here (the chart's sandbox.enforce, mounts a pod cannot have), or undefined. */
export function sandboxRefusal(spec: AgentTaskSpec, defaults: EpisodeDefaults | undefined): string | undefined {
  return enforceProblem(spec.sandbox, defaults?.sandbox) ?? podMountsProblem(spec.sandbox);
}

/** A sandboxed spec's NetworkPolicy written before any pod of the task (episode, gate) is made. */
export async function fenceTask(
  client: KubeClient,
  task: ClusterTask,
  spec: AgentTaskSpec,
  defaults: EpisodeDefaults | undefined,
): Promise<void> {
  if (spec.sandbox?.enabled) await ensurePolicy(client, task, spec.sandbox, defaults, proxyAllowOf(spec) !== undefined);
}

/** The task's NetworkPolicy as its sandbox says, before its pod exists (a pod never runs unfenced). */
export async function ensurePolicy(
  client: KubeClient,
  task: ClusterTask,
  sandbox: Sandbox,
  defaults: EpisodeDefaults | undefined,
  proxied: boolean,
): Promise<void> {
  const uid = task.object.metadata.uid as string;
  const policy = buildNetworkPolicy(
    { name: task.name, namespace: task.namespace, uid },
    sandbox,
    defaults?.sandbox,
    proxied,
  );
  const path = `/apis/networking.k8s.io/v1/namespaces/${task.namespace}/networkpolicies`;
  try {
    await client.create(path, policy, 'work');
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
    const { ownerReferences, labels } = policy.metadata;
    await client.mergePatch(
      `${path}/${policy.metadata.name}`,
      { metadata: { ownerReferences, labels }, spec: policy.spec },
      'work',
    );
  }
}

/** With its task: the garbage collector would too, but a cluster may run none (and it would wait). */
export async function deletePolicy(client: KubeClient, log: Logger, key: string): Promise<void> {
  const [namespace, name] = key.split('/');
  const path = `/apis/networking.k8s.io/v1/namespaces/${namespace}/networkpolicies/${networkPolicyName(name as string)}`;
  try {
    await client.delete(path, undefined, 'bookkeeping');
  } catch (err) {
    // Never in the way of forgetting a task: an unsandboxed task has none, an older RBAC may not allow it.
    if (!isStatus(err, 404))
      log.warn({ task: key, err: (err as Error).message }, 'cannot delete the sandbox NetworkPolicy');
  }
}
