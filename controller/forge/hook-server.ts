// POST /hooks/NAMESPACE/TRIGGER: a small node:http handler that verifies a forge's webhook delivery and hands
// the item it describes to a callback (the loop treats it like a poll result). 401 and nothing else happens
// on a missing or wrong signature; a replayed delivery id is answered 202 and ignored.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { headLine } from '../api/bounds.ts';
import type { ForgeComment, ForgeItem, ForgeKind } from '../api/forge-item.ts';
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

/** A fixed set, so the metric's labels stay bounded whatever a request sends. */
export type DeliveryResult =
  | 'accepted'
  | 'ignored'
  | 'replayed'
  | 'bad_signature'
  | 'invalid'
  | 'not_found'
  | 'too_large'
  | 'error';

/** How a request ended (for logs, metrics and tests); never holds the body or a header value but the id. */
export interface HookOutcome {
  status: number;
  reason: string;
  result: DeliveryResult;
  /** Set once the URL named a known webhook trigger. */
  forge?: ForgeKind;
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
    handle(req, opts, deliveries).then(reply, (err: Error) =>
      reply({ status: 500, reason: headLine(err.message) ?? '', result: 'error' }),
    );
  };
}

async function handle(req: http.IncomingMessage, opts: HookOptions, deliveries: DeliveryLog): Promise<HookOutcome> {
  const match = /^\/hooks\/([^/?]+)\/([^/?]+)\/?(?:\?.*)?$/.exec(req.url ?? '');
  const [namespace, trigger] = match ? [match[1], match[2]] : ['', ''];
  if (!NAME.test(namespace) || !NAME.test(trigger))
    return drained(req, { status: 404, reason: 'not a hook', result: 'not_found' });
  if (req.method !== 'POST')
    return drained(req, { status: 405, reason: 'POST only', result: 'invalid', namespace, trigger });
  const target = await opts.resolve(namespace, trigger);
  if (!target)
    return drained(req, { status: 404, reason: 'no such webhook trigger', result: 'not_found', namespace, trigger });
  const known = { namespace, trigger, forge: target.forge };
  const raw = await readBody(req, opts.maxBodyBytes ?? DEFAULT_MAX_BODY);
  if (!raw) return { status: 413, reason: 'body too large', result: 'too_large', ...known };
  const verdict = verifyWebhook(target.forge, req.headers, raw, target.secret);
  if (!verdict.ok) {
    const missingId = verdict.reason === 'missing delivery id';
    const result = missingId ? 'invalid' : 'bad_signature';
    return { status: missingId ? 400 : 401, reason: verdict.reason, result, ...known };
  }
  const { deliveryId } = verdict;
  if (deliveries.has(target.forge, deliveryId))
    return { status: 202, reason: 'replayed delivery ignored', result: 'replayed', ...known, deliveryId };
  let payload: unknown;
  try {
    payload = JSON.parse(raw.toString('utf8'));
  } catch {
    return { status: 400, reason: 'body is not JSON', result: 'invalid', ...known, deliveryId };
  }
  const found = webhookItem(target.forge, verdict.event, payload);
  if (found.kind === 'invalid')
    return { status: 400, reason: headLine(found.reason) ?? '', result: 'invalid', ...known, deliveryId };
  if (found.kind === 'item') {
    await opts.onItem({ namespace, trigger, forge: target.forge, event: verdict.event, deliveryId, ...found });
  }
  // Recorded only once handled: a delivery the callback failed on is retried by the forge, not lost.
  deliveries.add(target.forge, deliveryId);
  const accepted = found.kind === 'item';
  return {
    status: 202,
    reason: accepted ? 'accepted' : found.reason,
    result: accepted ? 'accepted' : 'ignored',
    ...known,
    deliveryId,
  };
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
