// The CONNECT proxy's rule, one for both modes (README "Sandbox"): a request head is admitted only when it is
// "CONNECT host:port" for a pair the episode's allowHosts (or an https gateway) names. Locally the sandbox's
// socket says whose request it is; on a cluster the Proxy-Authorization credential does (proxyCredential).
// Pure: the head, the allow list and the key in, a verdict out; connect-proxy.ts carries it out.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { QUOTED_TARGET_MAX, clip } from '../../api/bounds.ts';

/** A request head longer than this is no CONNECT of ours: refused before more is read. */
export const REQUEST_HEAD_MAX = 8192;

export type ConnectVerdict = { host: string; port: number } | { refused: string; status: 403 | 407 };

/** The request line and the Proxy-Authorization value of a head (up to the blank line), or undefined. */
export function parseHead(head: string): { line: string; authorization?: string } {
  const [line = '', ...headers] = head.split('\r\n');
  const auth = headers.find((h) => /^proxy-authorization:/i.test(h));
  return auth === undefined ? { line } : { line, authorization: auth.slice(auth.indexOf(':') + 1).trim() };
}

/** What a CONNECT request line asks for, if the proxy admits it: "CONNECT host:port HTTP/1.1". */
export function admitConnect(requestLine: string, allow: readonly string[]): ConnectVerdict {
  const m = /^CONNECT (\S+) HTTP\/1\.[01]$/.exec(requestLine);
  if (!m) return { refused: 'not a CONNECT request', status: 403 };
  const target = m[1].toLowerCase();
  if (!allow.some((a) => a.toLowerCase() === target))
    return { refused: `${clip(target, QUOTED_TARGET_MAX)} is not in allowHosts`, status: 403 };
  const colon = target.lastIndexOf(':');
  const host = target.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(target.slice(colon + 1)) };
}

/** The password of a task's pods at the cluster proxy: only the controller (holding the key) can make it. */
export function proxyCredential(key: Buffer, task: { namespace: string; name: string }): string {
  return createHmac('sha256', key).update(`${task.namespace}/${task.name}`).digest('base64url');
}

/** The user name of a task at the cluster proxy: "namespace.name" (a namespace has no dot). */
export function proxyUser(task: { namespace: string; name: string }): string {
  return `${task.namespace}.${task.name}`;
}

/**
 * A cluster proxy's verdict: the credential names a task (checked against the key), that task's allowHosts
 * (undefined: not a sandboxed task of this controller) admit the CONNECT.
 */
export function admitClusterConnect(
  head: string,
  key: Buffer,
  allowOf: (task: { namespace: string; name: string }) => readonly string[] | undefined,
): ConnectVerdict {
  const { line, authorization } = parseHead(head);
  const task = authorization === undefined ? undefined : taskOf(authorization, key);
  if (!task) return { refused: 'no valid Proxy-Authorization of a sandboxed task', status: 407 };
  const allow = allowOf(task);
  if (!allow) return { refused: `${clip(proxyUser(task), QUOTED_TARGET_MAX)} has no allowHosts here`, status: 403 };
  return admitConnect(line, allow);
}

function taskOf(authorization: string, key: Buffer): { namespace: string; name: string } | undefined {
  const m = /^Basic ([A-Za-z0-9+/=]{1,1024})$/.exec(authorization);
  if (!m) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = decoded.slice(0, Math.max(colon, 0));
  const dot = user.indexOf('.');
  if (colon < 0 || dot <= 0) return undefined;
  const task = { namespace: user.slice(0, dot), name: user.slice(dot + 1) };
  const given = Buffer.from(decoded.slice(colon + 1));
  const expected = Buffer.from(proxyCredential(key, task));
  return given.length === expected.length && timingSafeEqual(given, expected) ? task : undefined;
}
