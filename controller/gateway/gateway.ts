// The model gateway (issue 29): a streaming reverse proxy between an episode's agent and its model API. The
// agent holds only a capability token; the gateway checks it, checks what the episode may still spend,
// swaps the token for the real credential, forwards the request to the fixed upstream (undici) and streams
// the answer back as its bytes arrive, reading usage from them as they pass. Bodies are never logged.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Transform } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import {
  GATEWAY_HEADERS_TIMEOUT_MS,
  GATEWAY_IDLE_TIMEOUT_MS,
  GATEWAY_REQUEST_BYTES_MAX,
  GATEWAY_REQUEST_TIMEOUT_MS,
  addTokens,
  roundUSD,
  totalTokens,
} from '../api/bounds.ts';
import { pricingFor } from '../api/agent-credentials.ts';
import { costFromTokens } from '../api/pricing.ts';
import { requestStep } from '../reconciler/credential-governor.ts';
import type { Choice } from '../reconciler/credential-governor.ts';
import { judgeRequest } from '../reconciler/spend-cap.ts';
import { readAnswer, readBounded, relay } from './answer.ts';
import type { Answer } from './answer.ts';
import { classifyAnswer, seenLimits } from './upstream-signals.ts';
import { Grants } from './grants.ts';
import type { Grant } from './grants.ts';
import {
  budgetRefusal,
  checkTarget,
  downstreamHeaders,
  isChatCall,
  pausedRefusal,
  plainRefusal,
  timeoutRefusal,
  tokenCandidates,
  upstreamHeaders,
  withStreamUsage,
} from './request-policy.ts';
import type { Refusal } from './request-policy.ts';
import { UsageMeter } from './usage.ts';
import type { Usage } from './usage.ts';

export interface GatewayOptions {
  /** 127.0.0.1 locally. */
  host: string;
  /** 0: a random free port. */
  port?: number;
  log: Logger;
  /** A request body larger than this is refused (413) before anything is forwarded. */
  maxRequestBytes?: number;
  /** The time bounds of one exchange; api/bounds.ts GATEWAY_*_TIMEOUT_MS unless given (tests make them short). */
  timeouts?: Partial<GatewayTimeouts>;
  /** Called after each forwarded request with what it was metered at and the credential it went out on (metrics). */
  onUsage?: (grant: Grant, usage: Usage, costUSD: number, status: number, credential: string) => void;
  /** Called on every answer from upstream, a failed-over one too (metrics). */
  onAnswer?: (grant: Grant, credential: string, status: number) => void;
  /** The clock for pauses, per-minute limits and budget windows (tests inject one). */
  now?: () => Date;
  /** Waits `ms` on the same clock (a request held by per-minute limits); rejects when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface GatewayTimeouts {
  /** Until the upstream's answer starts (its status and headers). */
  headersMs: number;
  /** Between two chunks of the answer. */
  idleMs: number;
  /** The whole exchange, the answer's last byte included. */
  requestMs: number;
}

/** Where an episode's agent is pointed: the gateway's URL and the task's prefix (the token must match it). */
export function taskPrefix(namespace: string, task: string): string {
  return `/t/${encodeURIComponent(namespace)}/${encodeURIComponent(task)}`;
}

export interface Gateway {
  url: string;
  grants: Grants;
  /** The base URL for one task's agent (ANTHROPIC_BASE_URL and the like). */
  baseUrl(namespace: string, task: string): string;
  close(): Promise<void>;
}

const UNKNOWN_TOKEN =
  'episodic gateway: unknown or expired token (each episode has its own, valid only while it runs and only for its task)';

export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const grants = new Grants();
  const now = opts.now ?? (() => new Date());
  const sleep = opts.sleep ?? ((ms: number, signal: AbortSignal) => delay(ms, undefined, { signal }));
  const maxBytes = opts.maxRequestBytes ?? GATEWAY_REQUEST_BYTES_MAX;
  const bounds: GatewayTimeouts = {
    headersMs: GATEWAY_HEADERS_TIMEOUT_MS,
    idleMs: GATEWAY_IDLE_TIMEOUT_MS,
    requestMs: GATEWAY_REQUEST_TIMEOUT_MS,
    ...opts.timeouts,
  };
  const agent = new Agent({ headersTimeout: bounds.headersMs, bodyTimeout: bounds.idleMs, connections: 256 });
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      opts.log.warn({ err: (err as Error).message }, 'gateway request failed');
      if (!res.headersSent) send(res, plainRefusal(502, 'episodic gateway: the upstream request failed'));
      else res.destroy();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    const grant = tokenCandidates(req.headers, raw)
      .map((t) => grants.get(t))
      .find((g) => g !== undefined);
    const prefix = grant && taskPrefix(grant.namespace, grant.task);
    if (!grant || !prefix || !raw.startsWith(`${prefix}/`)) return refuse(req, res, plainRefusal(401, UNKNOWN_TOKEN));
    const method = req.method ?? 'GET';
    const target = checkTarget(grant.provider, method, raw.slice(prefix.length));
    if (!target.ok) return refuse(req, res, plainRefusal(target.status, target.message));
    if (method !== 'POST' && method !== 'GET')
      return refuse(req, res, plainRefusal(405, `episodic gateway: ${method} is not forwarded`));
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > maxBytes) return refuse(req, res, tooLarge(maxBytes));
    const own = { costUSD: grant.metered.costUSD, tokens: totalTokens(grant.metered.tokens) };
    const verdict = judgeRequest(grant.leash, own, grants.sharedSpendOf(grant), now());
    if (verdict.kind === 'refuse') {
      if (!grant.metered.refused) {
        grant.metered.refused = verdict.message;
        // Once per episode: when its hard stop began (the episode's end follows; bench/gateway-hardstop times it).
        opts.log.info(
          { namespace: grant.namespace, task: grant.task, episode: grant.episode },
          'gateway: budget exhausted, requests refused',
        );
        grant.onRefused?.(verdict.message);
      }
      return refuse(req, res, budgetRefusal(grant.provider, verdict.message));
    }
    const chat = isChatCall(grant.provider, method, target.path);
    await forward(req, res, grant, `${grant.upstream}${target.path}${target.query}`, method, chat);
  }

  async function forward(
    req: IncomingMessage,
    res: ServerResponse,
    grant: Grant,
    url: string,
    method: string,
    chat: boolean,
  ) {
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort(new Error('request timed out'));
    }, bounds.requestMs);
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('the agent went away'));
    });
    grant.metered.inFlight++;
    let meter: UsageMeter | undefined;
    let status = 0;
    let credential = '';
    let chargeCredential: ((tokens: number) => void) | undefined;
    let flush: NodeJS.Immediate | undefined;
    try {
      // A pool may send the request again on another credential, and a chat request is made to ask for its
      // usage: their bodies are kept (bounded). Any other body streams through.
      const keep = (grant.credentials.length > 1 || chat) && method === 'POST';
      const read = keep ? await readBounded(req, maxBytes) : undefined;
      if (read === null) return refuse(req, res, tooLarge(maxBytes));
      const kept = chat && read ? withStreamUsage(read) : read;
      const tried: string[] = [];
      let held: Answer | undefined;
      for (;;) {
        const step = requestStep(chooseFor(grant, tried), held !== undefined, now());
        if (step.kind === 'answer') break;
        if (step.kind === 'wait') {
          await sleep(step.ms, abort.signal);
          continue;
        }
        if (step.kind === 'refuse') return refuse(req, res, pausedRefusal(grant.provider, step.until, now()));
        const choice = step;
        held?.upstream.body.destroy();
        held = undefined;
        tried.push(choice.name);
        const value = grant.credentials.find((c) => c.name === choice.name)?.value ?? '';
        const charge = grant.pool?.sent(choice.name, now());
        let overflow = false;
        const body = method !== 'POST' ? undefined : (kept ?? req.pipe(byteLimit(maxBytes, () => (overflow = true))));
        const upstream = await request(url, {
          method: method as 'POST' | 'GET',
          headers: {
            ...upstreamHeaders(grant.provider, req.headers, value),
            ...(kept ? { 'content-length': String(kept.length) } : {}),
          },
          body,
          signal: abort.signal,
          dispatcher: agent,
        }).catch((err: unknown) => {
          if (overflow) return undefined;
          throw err;
        });
        if (!upstream) return refuse(req, res, tooLarge(maxBytes));
        const answer = await readAnswer(upstream);
        const secrets = grant.credentials.map((c) => c.value);
        const signal = classifyAnswer(
          grant.provider,
          answer.status,
          upstream.headers,
          answer.errorText,
          now(),
          secrets,
        );
        grant.pool?.answered(choice.name, signal, seenLimits(upstream.headers, now()), now());
        opts.onAnswer?.(grant, choice.name, answer.status);
        held = answer;
        credential = choice.name;
        chargeCredential = charge;
        if (kept === undefined || (signal.kind !== 'retry' && signal.kind !== 'usage-limit')) break;
        opts.log.info(
          { credential: choice.name, status: answer.status },
          'gateway: failing over to another credential',
        );
      }
      if (!held) return;
      grant.sticky = credential;
      status = held.status;
      res.writeHead(status, downstreamHeaders(held.upstream.headers));
      // The headers go out with the first chunk (one write, not two) when it is already here; else on the next
      // turn of the loop, so an upstream that sends its headers and then thinks still shows them at once.
      flush = setImmediate(() => res.flushHeaders());
      meter = new UsageMeter(grant.provider, String(held.upstream.headers['content-type'] ?? ''), modelOf(url));
      const metering = meter;
      await relay(held.body(), res, (chunk) => {
        clearImmediate(flush);
        metering.push(chunk);
      });
    } catch (err) {
      // A bound ran out before the answer started: the agent hears it in its provider's shape, not a cut socket.
      // Later, the stream is cut (the caller destroys it) and what passed is charged.
      const bound = timedOut ? bounds.requestMs : headersTimedOut(err) ? bounds.headersMs : undefined;
      if (bound === undefined || res.headersSent) throw err;
      opts.log.warn({ boundMs: bound }, 'gateway: the upstream did not answer in time');
      send(
        res,
        timeoutRefusal(grant.provider, `episodic gateway: no answer from the upstream within ${bound / 1000} s`),
      );
    } finally {
      clearTimeout(timer);
      clearImmediate(flush);
      grant.metered.inFlight--;
      // What passed is charged, whether the answer ended or was cut short.
      if (meter) charge(grant, credential, meter.done(), status, chargeCredential);
    }
  }

  /** The credential for the request's next attempt: the governor's choice in a pool, else the one credential. */
  function chooseFor(grant: Grant, tried: readonly string[]): Choice {
    const names = grant.credentials.map((c) => c.name);
    if (grant.pool) return grant.pool.choose(names, grant.sticky, tried, now());
    const first = names.find((n) => !tried.includes(n));
    return first !== undefined && tried.length === 0 ? { kind: 'use', name: first } : { kind: 'none' };
  }

  function charge(
    grant: Grant,
    credential: string,
    usage: Usage,
    status: number,
    onCredential?: (tokens: number) => void,
  ): void {
    const price = pricingFor(grant.pricing, usage.model);
    const cost = price ? costFromTokens(usage, price) : 0;
    const m = grant.metered;
    m.requests++;
    m.tokens = addTokens(m.tokens, usage);
    m.costUSD = roundUSD(m.costUSD + cost);
    onCredential?.(totalTokens(usage));
    opts.onUsage?.(grant, usage, cost, status, credential);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host, () => resolve());
  });
  // The gateway serves episodes; it never keeps the controller's process alive by itself.
  server.unref();
  const { port } = server.address() as AddressInfo;
  const url = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`;
  return {
    url,
    grants,
    baseUrl: (namespace, task) => `${url}${taskPrefix(namespace, task)}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await agent.close();
    },
  };
}

/** A refusal: the request's body is drained, never forwarded, and the connection closed after the answer. */
function refuse(req: IncomingMessage, res: ServerResponse, refusal: Refusal): void {
  req.unpipe();
  req.resume();
  send(res, refusal, true);
}

function send(res: ServerResponse, refusal: Refusal, close = false): void {
  res.writeHead(refusal.status, {
    ...refusal.headers,
    'content-length': Buffer.byteLength(refusal.body),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(refusal.body);
}

function tooLarge(max: number): Refusal {
  return plainRefusal(413, `episodic gateway: the request body is over ${max} bytes`);
}

/** Fails the stream (and so the upstream request) once more than `max` bytes went through it. */
function byteLimit(max: number, onOverflow: () => void): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > max) {
        onOverflow();
        done(new Error('request body too large'));
      } else done(null, chunk);
    },
  });
}

/** undici gave up waiting for the answer's headers (Agent headersTimeout). */
function headersTimedOut(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'UND_ERR_HEADERS_TIMEOUT';
}

/** Gemini names the model in the path; the others in the answer. */
function modelOf(url: string): string | undefined {
  return /\/models\/([A-Za-z0-9._-]+):/.exec(url)?.[1];
}
