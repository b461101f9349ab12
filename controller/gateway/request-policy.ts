// What the gateway lets through, as pure rules: which request targets a provider's agent may call (a path
// below the fixed upstream, never a host), where the agent put its capability token, which headers travel
// each way (every auth header the agent sent is dropped; the real credential is set here), and how a refusal
// looks in the provider's own error shape, so the CLI shows it and stops instead of retrying.
import type { IncomingHttpHeaders } from 'node:http';
import type { Provider } from './usage.ts';

export type Target = { ok: true; path: string; query: string } | { ok: false; status: number; message: string };

/** The API calls the three CLIs make, per provider: anything else is 404 and never forwarded. */
const ALLOWED: Record<Provider, RegExp[]> = {
  anthropic: [/^\/v1\/messages$/, /^\/v1\/messages\/count_tokens$/, /^\/v1\/models(\/[A-Za-z0-9._-]+)?$/],
  openai: [/^\/v1\/responses$/, /^\/v1\/chat\/completions$/, /^\/v1\/models(\/[A-Za-z0-9._-]+)?$/],
  gemini: [
    /^\/v1(beta|alpha)?\/models\/[A-Za-z0-9._-]+:(generateContent|streamGenerateContent|countTokens)$/,
    /^\/v1(beta|alpha)?\/models(\/[A-Za-z0-9._-]+)?$/,
  ],
};

/** Query parameters forwarded: Gemini's `alt=sse`; the `key` parameter (an agent's token) never is. */
const FORWARDED_QUERY = new Set(['alt', 'beta']);

/** The request target as the agent sent it (origin-form only): its path and the query to forward. */
export function checkTarget(provider: Provider, method: string, raw: string): Target {
  if (!raw.startsWith('/') || raw.startsWith('//'))
    return { ok: false, status: 400, message: 'episodic gateway: only a path is accepted, never a host' };
  if (/[\x00-\x20\x7f\\]/.test(raw) || /%(0[0-9a-f]|1[0-9a-f]|7f|2e|2f|5c)/i.test(raw))
    return {
      ok: false,
      status: 400,
      message: 'episodic gateway: control characters, spaces or encoded slashes in the path',
    };
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  if (path.split('/').some((s) => s === '.' || s === '..'))
    return { ok: false, status: 400, message: 'episodic gateway: dot segments in the path' };
  if (!ALLOWED[provider].some((re) => re.test(path)))
    return {
      ok: false,
      status: 404,
      message: `episodic gateway: ${method} ${path} is not a ${provider} API call it forwards`,
    };
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const kept = new URLSearchParams();
  for (const [k, v] of params) if (FORWARDED_QUERY.has(k)) kept.append(k, v);
  const query = kept.size > 0 ? `?${kept.toString()}` : '';
  return { ok: true, path, query };
}

/** A Chat Completions call: its stream names usage only when asked to (withStreamUsage). */
export function isChatCall(provider: Provider, method: string, path: string): boolean {
  return provider === 'openai' && method === 'POST' && path === '/v1/chat/completions';
}

/**
 * A streamed Chat Completions request, made to ask for its usage chunk (stream_options.include_usage): without
 * it the stream names no usage, and an agent could spend past its cap unmetered. Any other body is unchanged.
 */
export function withStreamUsage(body: Buffer): Buffer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return body; // the upstream refuses it; nothing is streamed
  }
  const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
  if (!isObject(parsed) || parsed.stream !== true) return body;
  const options = isObject(parsed.stream_options) ? parsed.stream_options : {};
  if (options.include_usage === true) return body;
  return Buffer.from(JSON.stringify({ ...parsed, stream_options: { ...options, include_usage: true } }));
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * Where the agent may have put its capability token: wherever its CLI puts an API key (a bearer token,
 * x-api-key, x-goog-api-key, ?key=). Every candidate is tried: a CLI may send a key in one and junk in another.
 */
export function tokenCandidates(headers: IncomingHttpHeaders, raw: string): string[] {
  const bearer = /^Bearer\s+(\S+)$/i.exec(first(headers.authorization) ?? '')?.[1];
  const fromQuery = new URLSearchParams(raw.includes('?') ? raw.slice(raw.indexOf('?') + 1) : '').get('key');
  const all = [bearer, first(headers['x-api-key']), first(headers['x-goog-api-key']), fromQuery ?? undefined];
  return all.filter((t): t is string => typeof t === 'string' && t.length > 0 && t.length <= 200);
}

// Hop-by-hop headers (RFC 9110 §7.6.1) and the gateway's own host: never forwarded either way (a length is).
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
]);
// Whatever could carry a credential of the agent's: dropped, the real one is set instead.
const AUTH = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'x-goog-api-key', 'cookie', 'api-key']);

/** The headers sent upstream: the agent's, less hop-by-hop and auth headers, with the real credential. */
export function upstreamHeaders(
  provider: Provider,
  incoming: IncomingHttpHeaders,
  key: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP.has(lower) || AUTH.has(lower) || lower.startsWith('x-forwarded-')) continue;
    out[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  // Usage is read from the bytes as they pass: they must arrive uncompressed.
  out['accept-encoding'] = 'identity';
  if (provider === 'anthropic') {
    // A subscription's OAuth token is a bearer token; an API key goes in x-api-key.
    if (key.startsWith('sk-ant-oat')) out.authorization = `Bearer ${key}`;
    else out['x-api-key'] = key;
  } else if (provider === 'openai') out.authorization = `Bearer ${key}`;
  else out['x-goog-api-key'] = key;
  return out;
}

/** The upstream's response headers for the agent: hop-by-hop and cookies dropped. */
export function downstreamHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP.has(lower) || lower === 'set-cookie') continue;
    out[lower] = value;
  }
  return out;
}

export interface Refusal {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A refusal in the provider's own error shape. Budget refusals use a status each CLI treats as final (no
 * retry): Anthropic 400 invalid_request_error, OpenAI 429 insufficient_quota, Gemini 403 PERMISSION_DENIED.
 */
export function budgetRefusal(provider: Provider, message: string): Refusal {
  const headers = { 'content-type': 'application/json' };
  if (provider === 'anthropic')
    return {
      status: 400,
      headers,
      body: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } }),
    };
  if (provider === 'openai')
    return {
      status: 429,
      headers,
      body: JSON.stringify({ error: { message, type: 'insufficient_quota', code: 'insufficient_quota', param: null } }),
    };
  return {
    status: 403,
    headers,
    body: JSON.stringify({ error: { code: 403, message, status: 'PERMISSION_DENIED' } }),
  };
}

/** The upstream did not answer within the gateway's bound: a 504 in the provider's own shape (its timeout error). */
export function timeoutRefusal(provider: Provider, message: string): Refusal {
  const headers = { 'content-type': 'application/json' };
  const body =
    provider === 'anthropic'
      ? { type: 'error', error: { type: 'timeout_error', message } }
      : provider === 'openai'
        ? { error: { message, type: 'timeout', code: 'timeout', param: null } }
        : { error: { code: 504, message, status: 'DEADLINE_EXCEEDED' } };
  return { status: 504, headers, body: JSON.stringify(body) };
}

/** A refusal that is the gateway's, not the provider's: plain text. */
export function plainRefusal(status: number, message: string): Refusal {
  return { status, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: `${message}\n` };
}

/**
 * Every credential of the pool is at a usage limit: the provider's own usage-limit answer with the reset, so
 * the CLI reports a usage limit and ends (and the controller holds the task until the reset) instead of retrying.
 */
export function pausedRefusal(provider: Provider, until: Date, now: Date): Refusal {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  const message = `episodic gateway: every credential of this pool is at a usage limit until ${until.toISOString()}`;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'retry-after': String(seconds) };
  if (provider === 'anthropic') {
    const reset = String(Math.ceil(until.getTime() / 1000));
    Object.assign(headers, {
      'anthropic-ratelimit-unified-status': 'rejected',
      'anthropic-ratelimit-unified-reset': reset,
    });
    return {
      status: 429,
      headers,
      body: JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message } }),
    };
  }
  if (provider === 'openai')
    return {
      status: 429,
      headers,
      body: JSON.stringify({
        error: {
          type: 'usage_limit_reached',
          message,
          resets_at: Math.ceil(until.getTime() / 1000),
          resets_in_seconds: seconds,
        },
      }),
    };
  const details = [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${seconds}s` }];
  return {
    status: 429,
    headers,
    body: JSON.stringify({ error: { code: 429, message, status: 'RESOURCE_EXHAUSTED', details } }),
  };
}
