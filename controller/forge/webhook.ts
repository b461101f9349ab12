// Webhooks, pure: is a delivery signed with the trigger's secret (HMAC-SHA256 of the raw body, compared in
// constant time), which item does it describe (the same ForgeItem a poll yields), and was it seen before.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { parseComment, parseIssue, parsePull } from './shapes.ts';
import { DELIVERY_ID_MAX, WEBHOOK_EVENT_MAX } from '../api/bounds.ts';
import type { ForgeComment, ForgeItem, ForgeKind } from '../api/forge-item.ts';

export type Headers = Record<string, string | string[] | undefined>;

export type WebhookVerdict =
  | { ok: true; event: string; deliveryId: string }
  | { ok: false; reason: 'missing signature' | 'bad signature' | 'missing delivery id' | 'no secret' };

const HEADERS: Record<ForgeKind, { signature: string; event: string; delivery: string; prefix: string }> = {
  github: {
    signature: 'x-hub-signature-256',
    event: 'x-github-event',
    delivery: 'x-github-delivery',
    prefix: 'sha256=',
  },
  // Gitea signs in hex without a prefix (it also sends X-Hub-Signature-256; one is enough).
  gitea: { signature: 'x-gitea-signature', event: 'x-gitea-event', delivery: 'x-gitea-delivery', prefix: '' },
};

/** One header's value (node lowercases names; a repeated header counts by its first value). */
export function header(headers: Headers, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Whether the delivery carries the forge's signature of exactly these bytes under `secret`. */
export function verifyWebhook(forge: ForgeKind, headers: Headers, rawBody: Buffer, secret: string): WebhookVerdict {
  const names = HEADERS[forge];
  if (!secret) return { ok: false, reason: 'no secret' };
  const given = header(headers, names.signature);
  if (!given) return { ok: false, reason: 'missing signature' };
  const hex = given.startsWith(names.prefix) ? given.slice(names.prefix.length) : '';
  if (!signatureMatches(hex, rawBody, secret)) return { ok: false, reason: 'bad signature' };
  const deliveryId = header(headers, names.delivery)?.slice(0, DELIVERY_ID_MAX);
  if (!deliveryId) return { ok: false, reason: 'missing delivery id' };
  return { ok: true, event: (header(headers, names.event) ?? '').slice(0, WEBHOOK_EVENT_MAX), deliveryId };
}

/** Whether `hex` is the HMAC-SHA256 of body under secret (compared in constant time). */
export function signatureMatches(hex: string, rawBody: Buffer, secret: string): boolean {
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  const actual = /^[0-9a-f]{64}$/i.test(hex) ? Buffer.from(hex, 'hex') : Buffer.alloc(0);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export type WebhookItem =
  | { kind: 'item'; action: string; item: ForgeItem; comment?: ForgeComment; repo?: string }
  | { kind: 'ignored'; reason: string }
  | { kind: 'invalid'; reason: string };

const Action = z.object({
  action: z.string().max(50).default(''),
  repository: z
    .object({ full_name: z.string().max(200) })
    .optional()
    .catch(undefined),
});

/**
 * The item an `issues`, `issue_comment` or `pull_request` delivery is about (Gitea names its label, assign
 * and sync variants the same in X-Gitea-Event). Other events, and deleted comments, are ignored.
 */
export function webhookItem(forge: ForgeKind, event: string, payload: unknown): WebhookItem {
  const parsed = Action.safeParse(payload);
  if (!parsed.success) return { kind: 'invalid', reason: 'not an event object' };
  const action = parsed.data.action;
  const found = itemOf(forge, event, action, payload);
  const repo = parsed.data.repository?.full_name;
  return found.kind === 'item' && repo ? { ...found, repo } : found;
}

function itemOf(forge: ForgeKind, event: string, action: string, payload: unknown): WebhookItem {
  const body = payload as Record<string, unknown>;
  let field = 'issue'; // which part failed, for the 400's reason
  try {
    if (event === 'issues') return { kind: 'item', action, item: parseIssue(body.issue) };
    field = 'pull_request';
    if (event === 'pull_request') return { kind: 'item', action, item: parsePull(body.pull_request) };
    if (event === 'issue_comment' || event === 'pull_request_comment') {
      if (action === 'deleted') return { kind: 'ignored', reason: 'a deleted comment' };
      field = 'issue';
      const item = parseIssue(body.issue);
      if (event === 'pull_request_comment') item.isPullRequest = true;
      field = 'comment';
      return { kind: 'item', action, item, comment: parseComment(body.comment, item.number) };
    }
  } catch (err) {
    const issue = err instanceof z.ZodError ? err.issues[0] : undefined;
    const where = [field, ...(issue?.path ?? [])].join('.');
    return { kind: 'invalid', reason: `${forge} ${event}: ${where}: ${issue?.message ?? 'unreadable'}` };
  }
  return { kind: 'ignored', reason: `event ${event || '(none)'} is not one triggers use` };
}

/** Delivery ids seen lately (a bounded LRU): a replayed delivery is recognised and changes nothing. */
export class DeliveryLog {
  readonly #max: number;
  readonly #seen = new Map<string, true>();

  constructor(max = 10_000) {
    this.#max = max;
  }

  has(forge: ForgeKind, id: string): boolean {
    const key = `${forge}:${id}`;
    if (!this.#seen.has(key)) return false;
    this.#seen.delete(key); // refreshed: a replay keeps the id among the newest
    this.#seen.set(key, true);
    return true;
  }

  add(forge: ForgeKind, id: string): void {
    this.#seen.set(`${forge}:${id}`, true);
    while (this.#seen.size > this.#max) {
      const oldest = this.#seen.keys().next().value;
      if (oldest === undefined) break;
      this.#seen.delete(oldest);
    }
  }

  get size(): number {
    return this.#seen.size;
  }
}
