// Who may use the console and from where: loopback needs nothing; beyond it a bearer token (header or the
// cookie /login sets). Actions also need a custom header and a same-origin request, so a page elsewhere
// cannot make a browser post one (a cross-origin custom header needs a CORS preflight we never answer).
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const TOKEN_ENV = 'EPISODIC_CONSOLE_TOKEN';
export const COOKIE = 'episodic_console';
export const ACTION_HEADER = 'x-episodic-console';

export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** "HOST:PORT", ":PORT" or "PORT"; no host means 127.0.0.1 (never every interface by accident). */
export function parseListen(address: string): { host: string; port: number } {
  const match = /^(?:(.*):)?(\d+)$/.exec(address.trim());
  const port = Number(match?.[2]);
  if (!match || port > 65535) throw new Error(`invalid address "${address}": expected HOST:PORT, :PORT or PORT`);
  return { host: (match[1] ?? '').replace(/^\[(.*)\]$/, '$1') || '127.0.0.1', port };
}

/** The one line said when the console would listen beyond localhost without a token. */
export function tokenRequiredMessage(host: string): string {
  return `listening on ${host} (beyond localhost) needs a bearer token: set ${TOKEN_ENV} (on a cluster, from a Secret)`;
}

function sameSecret(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function cookieValue(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return decodeURIComponent(v.join('='));
  }
  return undefined;
}

export function authorized(req: IncomingMessage, token: string | undefined): boolean {
  if (token === undefined) return true;
  const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  return sameSecret(bearer, token) || sameSecret(cookieValue(req, COOKIE), token);
}

/** Bound to loopback: a Host that is not (DNS rebinding) is refused. */
export function hostAllowed(req: IncomingMessage, loopbackOnly: boolean): boolean {
  if (!loopbackOnly) return true;
  const host = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
  return isLoopback(host);
}

/** A state-changing request: our header, and no sign of another origin. */
export function sameOriginAction(req: IncomingMessage): boolean {
  if (req.headers[ACTION_HEADER] !== '1') return false;
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return false;
  const origin = req.headers.origin;
  return origin === undefined || origin === `http://${req.headers.host}`;
}
