// spec.sandbox on a cluster: the NetworkPolicy of a sandboxed task's pods (made by the controller, owned by
// the task): ingress denied; egress to DNS, the model gateway's pods, the controller's CONNECT proxy (allowHosts)
// and allowCIDRs only (network gateway),
// DNS only (none), anything (open). Pure; enforcement is the CNI's (README "Sandbox").
import { API_VERSION, KIND } from '../../api/agent-task.ts';
import type { Sandbox } from '../../api/sandbox.ts';
import type { EpisodeDefaults } from '../../kube/episode-defaults.ts';
import { MANAGED_BY_LABEL, TASK_LABEL } from '../../kube/names.ts';

export interface SandboxNetworkPolicy {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    ownerReferences: Array<Record<string, unknown>>;
  };
  spec: Record<string, unknown>;
}

/** One policy per task, named after it: "episodic-sandbox-" + the task's name (≤ 63 + 17 fits 253). */
export function networkPolicyName(task: string): string {
  return `episodic-sandbox-${task}`;
}

const DNS_EGRESS = {
  to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
  ports: [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
  ],
};

export function buildNetworkPolicy(
  task: { name: string; namespace: string; uid: string },
  sandbox: Sandbox,
  defaults: EpisodeDefaults['sandbox'],
  /** The pods dial the controller's CONNECT proxy (proxy-env.ts: allowHosts or an https gateway). */
  proxied = sandbox.allowHosts.length > 0,
): SandboxNetworkPolicy {
  const egress: Array<Record<string, unknown>> = [];
  if (sandbox.network === 'open') egress.push({});
  else {
    egress.push(DNS_EGRESS);
    const gateway = defaults?.gateway;
    if (sandbox.network === 'gateway' && gateway)
      egress.push({
        to: [peerOf(gateway)],
        ports: [{ protocol: 'TCP', port: gateway.port }],
      });
    const proxy = defaults?.proxy;
    if (sandbox.network === 'gateway' && proxied && proxy)
      egress.push({ to: [peerOf(proxy)], ports: [{ protocol: 'TCP', port: proxy.port }] });
    if (sandbox.network === 'gateway' && sandbox.allowCIDRs.length > 0)
      egress.push({ to: sandbox.allowCIDRs.map((cidr) => ({ ipBlock: { cidr } })) });
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: networkPolicyName(task.name),
      namespace: task.namespace,
      labels: { [TASK_LABEL]: task.name, [MANAGED_BY_LABEL]: 'episodic' },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: KIND,
          name: task.name,
          uid: task.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      // Exactly this task's episode pods: the controller's labels, which defaults cannot override.
      podSelector: { matchLabels: { [TASK_LABEL]: task.name, [MANAGED_BY_LABEL]: 'episodic' } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress,
    },
  };
}

/** Pods of a namespace (the task's own when none is named) by their labels. */
function peerOf(pods: { namespace?: string; podLabels: Record<string, string> }): Record<string, unknown> {
  return {
    namespaceSelector: pods.namespace ? { matchLabels: { 'kubernetes.io/metadata.name': pods.namespace } } : {},
    podSelector: { matchLabels: { ...pods.podLabels } },
  };
}

/** Why a task cannot run under the chart's sandbox.enforce, or undefined. */
export function enforceProblem(sandbox: Sandbox | undefined, defaults: EpisodeDefaults['sandbox']): string | undefined {
  if (!defaults?.enforce || sandbox?.enabled) return undefined;
  return 'spec.sandbox.enabled: the controller enforces sandboxed episodes (chart sandbox.enforce); set spec.sandbox';
}
