// POST /hooks/NAMESPACE/TRIGGER: a small node:http handler that verifies a forge's webhook delivery and hands
// the item it describes to a callback (the loop treats it like a poll result). 401 and nothing else happens
// on a missing or wrong signature; a replayed delivery id is answered 202 and ignored.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ForgeComment, ForgeItem, ForgeKind } from './types.ts';
import { DeliveryLog, verifyWebhook, webhookItem } from './webhook.ts';

export interface HookTarget {
  forge: ForgeKind;
  secret: string;
}

export interface HookDelivery {
  namespace: string;
  trigger: string;
  forge: ForgeKind;
  event: string;
  deliveryId: string;
  action: string;
  item: ForgeItem;
  comment?: ForgeComment;
  /** OWNER/NAME from the payload's repository, when it names one. */
  repo?: string;
}

/** How a request ended (for logs, metrics and tests); never holds the body or a header value but the id. */
export interface HookOutcome {
  status: number;
  reason: string;
  namespace?: string;
  trigger?: string;
  deliveryId?: string;
}

export interface HookOptions {
  /** The trigger's forge and secret, or undefined when there is no such webhook trigger. */
  resolve(namespace: string, trigger: string): HookTarget | undefined | Promise<HookTarget | undefined>;
  onItem(delivery: HookDelivery): void | Promise<void>;
  onOutcome?(outcome: HookOutcome): void;
  /** Issue and comment events are a few KB; GitHub caps any payload at 25 MB. */
  maxBodyBytes?: number;
  deliveries?: DeliveryLog;
}

const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const DEFAULT_MAX_BODY = 1 << 20;

export function hookHandler(opts: HookOptions): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const deliveries = opts.deliveries ?? new DeliveryLog();
  return (req, res) => {
    const reply = (outcome: HookOutcome) => {
      opts.onOutcome?.(outcome);
      if (res.headersSent) return;
      res.writeHead(outcome.status, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`${outcome.reason}\n`);
    };
    handle(req, opts, deliveries).then(reply, (err: Error) => reply({ status: 500, reason: clipReason(err.message) }));
  };
}

async function handle(req: http.IncomingMessage, opts: HookOptions, deliveries: DeliveryLog): Promise<HookOutcome> {
  const match = /^\/hooks\/([^/?]+)\/([^/?]+)\/?(?:\?.*)?$/.exec(req.url ?? '');
  const [namespace, trigger] = match ? [match[1], match[2]] : ['', ''];
  if (!NAME.test(namespace) || !NAME.test(trigger)) return drained(req, { status: 404, reason: 'not a hook' });
  if (req.method !== 'POST') return drained(req, { status: 405, reason: 'POST only', namespace, trigger });
  const target = await opts.resolve(namespace, trigger);
  if (!target) return drained(req, { status: 404, reason: 'no such webhook trigger', namespace, trigger });
  const raw = await readBody(req, opts.maxBodyBytes ?? DEFAULT_MAX_BODY);
  if (!raw) return { status: 413, reason: 'body too large', namespace, trigger };
  const verdict = verifyWebhook(target.forge, req.headers, raw, target.secret);
  if (!verdict.ok)
    return { status: verdict.reason === 'missing delivery id' ? 400 : 401, reason: verdict.reason, namespace, trigger };
  const { deliveryId } = verdict;
  if (deliveries.has(target.forge, deliveryId))
    return { status: 202, reason: 'replayed delivery ignored', namespace, trigger, deliveryId };
  let payload: unknown;
  try {
    payload = JSON.parse(raw.toString('utf8'));
  } catch {
    return { status: 400, reason: 'body is not JSON', namespace, trigger, deliveryId };
  }
  const found = webhookItem(target.forge, verdict.event, payload);
  if (found.kind === 'invalid')
    return { status: 400, reason: clipReason(found.reason), namespace, trigger, deliveryId };
  if (found.kind === 'item') {
    await opts.onItem({ namespace, trigger, forge: target.forge, event: verdict.event, deliveryId, ...found });
  }
  // Recorded only once handled: a delivery the callback failed on is retried by the forge, not lost.
  deliveries.add(target.forge, deliveryId);
  return { status: 202, reason: found.kind === 'item' ? 'accepted' : found.reason, namespace, trigger, deliveryId };
}

/** The body, or undefined once it passes `max` bytes (the rest is not read). */
function readBody(req: http.IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] ?? 0) > max) return resolve(drainedUndefined(req));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.removeAllListeners('data');
        req.resume();
        resolve(undefined);
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(size > max ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function drainedUndefined(req: http.IncomingMessage): undefined {
  req.resume();
  return undefined;
}

function drained(req: http.IncomingMessage, outcome: HookOutcome): HookOutcome {
  req.resume();
  return outcome;
}

function clipReason(text: string): string {
  return text.replace(/\s+/g, ' ').slice(0, 300);
}

export interface HookServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serves the hooks on host:port (127.0.0.1 and a free port by default). */
export async function startHookServer(opts: HookOptions & { host?: string; port?: number }): Promise<HookServer> {
  const server = http.createServer(hookHandler(opts));
  server.requestTimeout = 30_000;
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
