// What a provider's answer says about the credential it went out on, as pure rules: the rate-limit headers
// (anthropic-ratelimit-*, x-ratelimit-*, retry-after), and whether an error answer is worth another
// credential within the same request (a 429 rate limit, a 529 or 503 overload) or a usage limit that pauses
// the credential until its reset (Claude's 5-hour window, Codex's usage_limit_reached, Gemini's daily quota).
import { ERROR_TYPE_MAX, LINE_MAX, cleanName, clip, oneLine } from '../api/bounds.ts';
import { redact } from '../api/redaction.ts';
import type { SeenLimits } from '../reconciler/credential-governor.ts';
import type { Provider } from './usage.ts';

export type Signal =
  | { kind: 'ok' }
  /** Another credential may answer: rate-limited or overloaded; this one cools down until `until`. */
  | { kind: 'retry'; error: string; until?: Date }
  /** A usage limit: the credential is paused until `resetAt` (a fallback when the answer names none). */
  | { kind: 'usage-limit'; error: string; resetAt: Date }
  /** Any other answer: the agent's to see. */
  | { kind: 'other' };

/** Error bodies are read up to this much to classify them (they are small JSON documents). */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** A usage limit that names no reset pauses its credential this long. */
export const USAGE_LIMIT_DEFAULT_PAUSE_MS = 60 * 60_000;
/** A 429 or overload without retry-after cools its credential this long. */
export const RETRY_DEFAULT_COOL_MS = 5_000;
/** A retry delay longer than this is a quota, not a rate limit (Gemini gives a daily quota as a long RetryInfo). */
export const QUOTA_RETRY_MS = 10 * 60_000;

type Headers = Record<string, string | string[] | undefined>;
const header = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};
const int = (v: string | undefined): number | undefined => {
  const n = v === undefined ? Number.NaN : Number(v);
  return Number.isFinite(n) && n >= 0 ? Math.floor(n) : undefined;
};

/** "1s", "6m0s", "1h2m3.5s", "250ms" (OpenAI's reset durations) in ms. */
function duration(v: string | undefined): number | undefined {
  if (!v || !/^(\d+(\.\d+)?(ms|h|m|s))+$/.test(v)) return undefined;
  let ms = 0;
  for (const [, n, unit] of v.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g))
    ms += Number(n) * (unit === 'h' ? 3_600_000 : unit === 'm' ? 60_000 : unit === 's' ? 1000 : 1);
  return ms;
}

/** An instant given as RFC 3339, epoch seconds, or (OpenAI) a duration from now. */
function instant(v: string | undefined, now: Date): Date | undefined {
  if (!v) return undefined;
  const epoch = int(v);
  if (epoch !== undefined && /^\d{9,11}$/.test(v)) return new Date(epoch * 1000);
  const ms = duration(v);
  if (ms !== undefined) return new Date(now.getTime() + ms);
  const parsed = Date.parse(v);
  return Number.isNaN(parsed) ? undefined : new Date(parsed);
}

/** retry-after: seconds, or an HTTP date. */
export function retryAfter(h: Headers, now: Date): Date | undefined {
  const v = header(h, 'retry-after');
  if (v === undefined) return undefined;
  const s = /^\d+(\.\d+)?$/.test(v) ? Number(v) : undefined;
  if (s !== undefined) return new Date(now.getTime() + s * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : new Date(at);
}

/** The provider's own figures for the credential: what is left of its requests and tokens, and when it refills. */
export function seenLimits(h: Headers, now: Date): SeenLimits | undefined {
  const a = (k: string) => header(h, `anthropic-ratelimit-${k}`);
  const o = (k: string) => header(h, `x-ratelimit-${k}`);
  const seen: SeenLimits = {
    requestsRemaining: int(a('requests-remaining') ?? o('remaining-requests')),
    requestsLimit: int(a('requests-limit') ?? o('limit-requests')),
    tokensRemaining: int(a('tokens-remaining') ?? o('remaining-tokens')),
    tokensLimit: int(a('tokens-limit') ?? o('limit-tokens')),
  };
  const resets = [a('requests-reset'), a('tokens-reset'), o('reset-requests'), o('reset-tokens')]
    .map((v) => instant(v, now))
    .filter((d): d is Date => d !== undefined);
  if (resets.length > 0) seen.resetAt = new Date(Math.max(...resets.map((d) => d.getTime())));
  const known = Object.entries(seen).filter(([, v]) => v !== undefined);
  return known.length > 0 ? (Object.fromEntries(known) as SeenLimits) : undefined;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;

function parse(body: string): Json {
  try {
    return obj(JSON.parse(body)) ?? {};
  } catch {
    return {};
  }
}

/** The error's type and message, whatever the provider's shape; bounded, never the body itself. */
function errorOf(body: Json): { type: string; message: string } {
  const e = obj(body.error) ?? {};
  const type = String(e.type ?? e.status ?? e.code ?? '');
  return { type: cleanName(type, ERROR_TYPE_MAX), message: clip(oneLine(String(e.message ?? '')), LINE_MAX) };
}

const describe = (status: number, e: { type: string; message: string }) =>
  `${status}${e.type ? ` ${e.type}` : ''}${e.message ? `: ${e.message}` : ''}`;

/** Midnight Pacific time after `now`: when Google's per-day quotas reset. */
function nextPacificMidnight(now: Date): Date {
  const offset = new Intl.DateTimeFormat('en-US', { timeZone: 'America/Los_Angeles', timeZoneName: 'longOffset' })
    .formatToParts(now)
    .find((p) => p.type === 'timeZoneName')?.value;
  const m = /GMT([+-])(\d{2}):?(\d{2})/.exec(offset ?? '');
  const offsetMs = m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3_600_000 + Number(m[3]) * 60_000) : -8 * 3_600_000;
  const local = now.getTime() + offsetMs;
  const nextLocalMidnight = (Math.floor(local / 86_400_000) + 1) * 86_400_000;
  return new Date(nextLocalMidnight - offsetMs);
}

/** When a usage-limit answer says the limit lifts; undefined when it is not one. */
function usageLimitReset(
  provider: Provider,
  status: number,
  h: Headers,
  body: Json,
  now: Date,
): Date | null | undefined {
  const e = obj(body.error) ?? {};
  if (provider === 'anthropic') {
    if (status === 429 && header(h, 'anthropic-ratelimit-unified-status') === 'rejected')
      return instant(header(h, 'anthropic-ratelimit-unified-reset'), now) ?? null;
    // An API key's spend limit: "You will regain access on 2026-12-05 at 00:00 UTC."
    const day = /regain access on (\d{4}-\d{2}-\d{2}) at (\d{2}:\d{2}) UTC/.exec(String(e.message ?? ''));
    if (status === 400 && day) return new Date(`${day[1]}T${day[2]}:00Z`);
    return undefined;
  }
  if (provider === 'openai') {
    if (status !== 429 || e.type !== 'usage_limit_reached') return undefined;
    const at = typeof e.resets_at === 'number' ? new Date(e.resets_at * 1000) : undefined;
    const inS =
      typeof e.resets_in_seconds === 'number' ? new Date(now.getTime() + e.resets_in_seconds * 1000) : undefined;
    return at ?? inS ?? null;
  }
  if (status !== 429 || e.status !== 'RESOURCE_EXHAUSTED') return undefined;
  const details = Array.isArray(e.details) ? e.details.map(obj) : [];
  const perDay = details.some((d) =>
    (Array.isArray(d?.violations) ? d.violations : []).some((v) => /PerDay/.test(String(obj(v)?.quotaId ?? ''))),
  );
  if (perDay) return nextPacificMidnight(now);
  const delay = duration(String(details.find((d) => d?.retryDelay !== undefined)?.retryDelay ?? ''));
  return delay !== undefined && delay > QUOTA_RETRY_MS ? new Date(now.getTime() + delay) : undefined;
}

/**
 * What an answer (its status, headers and, for an error, its first MAX_ERROR_BODY_BYTES) means for its
 * credential; `secrets`: the pool's values, never kept in the error.
 */
export function classifyAnswer(
  provider: Provider,
  status: number,
  h: Headers,
  errorBody: string,
  now: Date,
  secrets: readonly string[] = [],
): Signal {
  if (status < 400) return { kind: 'ok' };
  const body = parse(errorBody);
  // The error is kept in status: whatever the provider echoed, no key of the pool's (nor any key-like word).
  const raw = errorOf(body);
  const e = { type: redact(raw.type, secrets), message: redact(raw.message, secrets) };
  const reset = usageLimitReset(provider, status, h, body, now);
  if (reset !== undefined)
    return {
      kind: 'usage-limit',
      error: describe(status, e),
      resetAt: reset && reset > now ? reset : new Date(now.getTime() + USAGE_LIMIT_DEFAULT_PAUSE_MS),
    };
  const overloaded =
    status === 529 || (status === 503 && (provider === 'gemini' || /overload/i.test(e.type + e.message)));
  // OpenAI's insufficient_quota is billing, not a rate: another credential may answer, this one cools.
  if (status === 429 || overloaded)
    return {
      kind: 'retry',
      error: describe(status, e),
      until: retryAfter(h, now) ?? new Date(now.getTime() + RETRY_DEFAULT_COOL_MS),
    };
  return { kind: 'other' };
}
