// Webhook deliveries wake a forge trigger's poll at once: `POST /hooks/NAMESPACE/TRIGGER`, signed with the
// trigger's secret (HMAC-SHA256 of the raw body: X-Gitea-Signature in hex, X-Hub-Signature-256 as
// "sha256=hex"), compared in constant time. The delivery only says "look now": the poll then reads the
// forge, so a forged or replayed payload can never describe an item, and a poll, a webhook and a restart
// still agree on one task per item. A missing or wrong signature is 401 and changes nothing; a delivery id
// seen before is ignored (202, nothing woken).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { DeliveryLog, signatureMatches } from '../../forge/webhook.ts';

/** A delivery is a few KiB; past this it is not one of ours. */
const MAX_BODY_BYTES = 1024 * 1024;
/** Delivery ids remembered for replay detection. */
const DELIVERIES_KEPT = 1000;
const EVENTS = new Set(['issues', 'issue_comment', 'pull_request']);

/** Whether `signature` (as the forge sent it) is the HMAC-SHA256 of body under secret; constant time. */
export function validSignature(body: Buffer, secret: string, signature: string | undefined): boolean {
  if (!signature || !secret) return false;
  const hex = signature.startsWith('sha256=') ? signature.slice('sha256='.length) : signature;
  return signatureMatches(hex, body, secret);
}

export interface HookTarget {
  /** The trigger's webhook secret, or undefined when it has no webhook (404). */
  secret(namespace: string, name: string): Promise<string | undefined>;
  wake(namespace: string, name: string): void;
}

export interface HookServer {
  url: string;
  close(): Promise<void>;
}

export async function startHookServer(opts: { address: string; target: HookTarget; log: Logger }): Promise<HookServer> {
  const seen = new DeliveryLog(DELIVERIES_KEPT);
  const server = http.createServer((req, res) => {
    void handle(req, opts, seen).then(
      (code) => {
        res.statusCode = code;
        res.end();
      },
      (err) => {
        opts.log.warn({ err: (err as Error).message }, 'webhook delivery failed');
        res.statusCode = 500;
        res.end();
      },
    );
  });
  const [host, port] = splitAddress(opts.address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  return { url, close: () => new Promise((r) => server.close(() => r())) };
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return i < 0
    ? ['0.0.0.0', Number(address)]
    : [address.slice(0, i).replace(/^\[|\]$/g, '') || '0.0.0.0', Number(address.slice(i + 1))];
}

async function handle(
  req: http.IncomingMessage,
  opts: { target: HookTarget; log: Logger },
  seen: DeliveryLog,
): Promise<number> {
  const match = /^\/hooks\/([a-z0-9-]{1,63})\/([a-z0-9-]{1,63})$/.exec(req.url ?? '');
  if (req.method !== 'POST') return 405;
  if (!match) return 404;
  const [, namespace, name] = match;
  const body = await readBody(req);
  if (!body) return 413;
  const secret = await opts.target.secret(namespace, name);
  if (secret === undefined) return 404;
  const signature = header(req, 'x-gitea-signature') ?? header(req, 'x-hub-signature-256');
  if (!validSignature(body, secret, signature)) {
    opts.log.warn({ trigger: `${namespace}/${name}` }, 'webhook delivery with a missing or wrong signature: ignored');
    return 401;
  }
  const delivery = header(req, 'x-gitea-delivery') ?? header(req, 'x-github-delivery');
  // One log for both forges' headers: the id alone identifies a delivery, as before.
  if (delivery) {
    if (seen.has('gitea', delivery)) return 202;
    seen.add('gitea', delivery);
  }
  const event = header(req, 'x-gitea-event') ?? header(req, 'x-github-event') ?? '';
  const trigger = `${namespace}/${name}`;
  if (!EVENTS.has(event)) {
    opts.log.debug({ trigger, event, delivery }, 'webhook delivery of another event: ignored');
    return 204;
  }
  opts.log.info({ trigger, event, delivery }, 'webhook delivery: polling now');
  opts.target.wake(namespace, name);
  return 202;
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

async function readBody(req: http.IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
