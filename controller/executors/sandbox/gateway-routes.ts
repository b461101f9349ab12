// network: gateway, decided: which endpoints of the agent's environment the relay carries, what the agent's
// environment says instead, and which host:port pairs the CONNECT proxy admits. Pure; gateway-bridge.ts serves it.
import { allowHostProblem } from '../../api/sandbox.ts';
import { SANDBOX_RUN_DIR } from './bwrap-argv.ts';
import { assignmentLine } from './relay-assignment.ts';

export { admitConnect } from './connect-rule.ts';

/** Ports on the sandbox's own loopback: nothing else listens there. */
export const RELAY_FIRST_PORT = 41_000;
export const PROXY_SOCKET = 'proxy.sock';

/** An endpoint the relay carries to the host: 127.0.0.1:localPort inside → host:port outside. */
export interface GatewayUpstream {
  env: string;
  host: string;
  port: number;
  localPort: number;
  socket: string;
}

export interface GatewayRoutes {
  /** The agent's environment with each carried endpoint pointing at the sandbox's loopback. */
  env: Record<string, string>;
  upstreams: GatewayUpstream[];
  /** host:port pairs the CONNECT proxy admits: allowHosts and the https gateways. */
  allow: string[];
  /** The proxy's port inside; undefined when nothing may be CONNECTed to. */
  proxyPort?: number;
}

/** The agent's gateway endpoints: every *_BASE_URL of its environment (ANTHROPIC_BASE_URL, OPENAI_BASE_URL…). */
export function isGatewayVariable(name: string): boolean {
  return name.endsWith('_BASE_URL') || name === 'EPISODIC_GATEWAY_URL';
}

export function gatewayRoutes(env: Record<string, string>, allowHosts: readonly string[]): GatewayRoutes {
  const out = { ...env };
  const upstreams: GatewayUpstream[] = [];
  const allow = new Set(allowHosts);
  for (const [name, value] of Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!isGatewayVariable(name)) continue;
    const url = parseUrl(value);
    if (!url) continue;
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    // TLS names its host: an https gateway is reached through the proxy, its URL unchanged.
    if (url.protocol === 'https:') {
      allow.add(`${url.hostname}:${port}`);
      continue;
    }
    const known = upstreams.find((u) => u.host === url.hostname && u.port === port);
    const upstream = known ?? {
      env: name,
      host: url.hostname,
      port,
      localPort: RELAY_FIRST_PORT + upstreams.length,
      socket: `gw-${upstreams.length}.sock`,
    };
    if (!known) upstreams.push(upstream);
    url.hostname = '127.0.0.1';
    url.port = String(upstream.localPort);
    out[name] = value.endsWith('/') || url.pathname !== '/' ? url.toString() : url.toString().replace(/\/$/, '');
  }
  const admitted = [...allow].filter((entry) => allowHostProblem(entry) === undefined);
  if (admitted.length === 0) return { env: out, upstreams, allow: [] };
  const proxyPort = RELAY_FIRST_PORT + 99;
  const proxy = `http://127.0.0.1:${proxyPort}`;
  Object.assign(out, { HTTPS_PROXY: proxy, https_proxy: proxy, HTTP_PROXY: proxy, http_proxy: proxy });
  Object.assign(out, { NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' });
  return { env: out, upstreams, allow: admitted, proxyPort };
}

/** What the task's relay is given (relay-assignment.ts): each loopback port and the socket it forwards to. */
export function relayAssignment(routes: GatewayRoutes): string {
  const listen = routes.upstreams.map((u) => ({ port: u.localPort, socket: `${SANDBOX_RUN_DIR}/${u.socket}` }));
  if (routes.proxyPort !== undefined)
    listen.push({ port: routes.proxyPort, socket: `${SANDBOX_RUN_DIR}/${PROXY_SOCKET}` });
  return assignmentLine(listen);
}

function parseUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}
