// allowHosts on a cluster (README "Sandbox"): a NetworkPolicy cannot name hosts, so a sandboxed pod reaches its
// allowHosts through the CONNECT proxy the controller serves, with the same rule as locally (connect-rule.ts).
// Pure: which pairs a task's pods may CONNECT to, and the proxy variables its pod gets.
import type { AgentTaskSpec } from '../../api/agent-task.ts';
import type { EpisodeDefaults } from '../../kube/episode-defaults.ts';
import { proxyCredential, proxyUser } from '../sandbox/connect-rule.ts';
import { gatewayRoutes } from '../sandbox/gateway-routes.ts';

export type ProxyDefaults = NonNullable<NonNullable<EpisodeDefaults['sandbox']>['proxy']>;
/** Names the controller sets on a proxied pod: a task's own of these would bypass or break the proxy. */
export const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];
// In-cluster names are reached directly (the NetworkPolicy decides); the proxy only CONNECTs.
const DIRECT = ['127.0.0.1', 'localhost', '.svc', '.cluster.local'];

/** The host:port pairs an episode of this (effective) spec may CONNECT to; undefined when it is not proxied. */
export function proxyAllowOf(spec: AgentTaskSpec): string[] | undefined {
  const box = spec.sandbox;
  if (!box?.enabled || box.network !== 'gateway') return undefined;
  const allow = gatewayRoutes(literalEnv(spec), box.allowHosts).allow;
  return allow.length > 0 ? allow : undefined;
}

/** The proxy variables of a pod of `task`, or none when it is not proxied or the chart serves no proxy. */
export function proxyEnv(
  task: { namespace: string; name: string },
  spec: AgentTaskSpec,
  proxy: ProxyDefaults | undefined,
  key: Buffer | undefined,
): Array<{ name: string; value: string }> {
  if (!proxy || !key || !proxyAllowOf(spec)) return [];
  const user = encodeURIComponent(proxyUser(task));
  const url = `http://${user}:${proxyCredential(key, task)}@${proxy.host}:${proxy.port}`;
  const direct = [...new Set([...DIRECT, ...gatewayHosts(spec)])].join(',');
  return PROXY_VARIABLES.map((name) => ({ name, value: name.toLowerCase() === 'no_proxy' ? direct : url }));
}

function literalEnv(spec: AgentTaskSpec): Record<string, string> {
  return Object.fromEntries(spec.agent.env.flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])));
}

/** http gateway endpoints are reached directly (the NetworkPolicy admits the gateway), never proxied. */
function gatewayHosts(spec: AgentTaskSpec): string[] {
  const routes = gatewayRoutes(literalEnv(spec), []);
  return routes.upstreams.map((u) => u.host);
}
