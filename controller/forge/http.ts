// What both forge clients share: reading rate-limit headers, and turning a failed response into a typed
// error whose text can never hold the token.
import { clip } from '../api/bounds.ts';
import { redact } from '../api/redaction.ts';
import type { ForgeKind } from '../api/forge-item.ts';
import { ForgeRateLimitedError, ForgeRequestError, ForgeUnavailableError } from './types.ts';

export type HeaderGetter = (name: string) => string | null | undefined;

/**
 * When a rate-limited answer says to come back, or undefined if it is not one. GitHub: 403/429 with
 * x-ratelimit-remaining 0 and x-ratelimit-reset (epoch seconds), or retry-after (seconds) for the secondary
 * limit; Gitea behind a proxy: 429 with retry-after.
 */
export function rateLimitReset(status: number, header: HeaderGetter, now: Date): Date | undefined {
  if (status !== 403 && status !== 429) return undefined;
  const retryAfter = Number(header('retry-after'));
  if (header('retry-after') && Number.isFinite(retryAfter)) return new Date(now.getTime() + retryAfter * 1000);
  const reset = Number(header('x-ratelimit-reset'));
  if (header('x-ratelimit-remaining') === '0' && Number.isFinite(reset) && reset > 0) {
    return new Date(Math.max(reset * 1000, now.getTime()));
  }
  // A 429 without a hint: a minute is what GitHub documents for its secondary limit.
  return status === 429 ? new Date(now.getTime() + 60_000) : undefined;
}

/** The typed error for a failed request: `what` is "METHOD /path" (no query, no headers). */
export function forgeError(
  forge: ForgeKind,
  what: string,
  status: number | undefined,
  detail: string,
  secret: string,
  resetAt?: Date,
): Error {
  const text = redact(clip(`${forge} ${what} -> ${status ?? 'no answer'}: ${detail}`, 500), [secret]);
  if (resetAt) return new ForgeRateLimitedError(text, resetAt);
  if (status === undefined || status >= 500 || status === 408) return new ForgeUnavailableError(text, status);
  return new ForgeRequestError(text, status);
}

/** Drops the query string: paths are safe to quote, queries may carry user text. */
export function pathOnly(url: string): string {
  const i = url.indexOf('?');
  return i < 0 ? url : url.slice(0, i);
}

export function splitRepo(repo: string): { owner: string; name: string } {
  const [owner, name, ...rest] = repo.split('/');
  if (!owner || !name || rest.length > 0) throw new Error(`repo must be OWNER/NAME, got ${clip(repo, 100)}`);
  return { owner, name };
}

/**
 * fetch, asked once more when a GET meets a connection the server had already closed (a kept-alive socket
 * that timed out on its side while we were busy): that is not an outage, and backing off for it would cost
 * a poll interval. Anything else, or a second failure, is the caller's to classify.
 */
export async function fetchRetryingStale(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (err) {
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    if (method !== 'GET' || !staleConnection(err) || init?.signal?.aborted) throw err;
    return fetch(input, init);
  }
}

function staleConnection(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code === 'ECONNRESET' || cause?.code === 'UND_ERR_SOCKET' || cause?.code === 'EPIPE';
}
