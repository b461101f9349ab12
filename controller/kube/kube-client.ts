// A thin JSON client for the Kubernetes API on node:https. Why not client-node's generated APIs: they
// turn timestamps into Date objects (watch events keep strings, so a cache would hold both), they build a
// new connection pool per request, and they give no hook for a shared QPS limit. We still use client-node
// for what it does well: reading kubeconfigs (files, in-cluster, exec and token-file auth).
import http from 'node:http';
import https from 'node:https';
import { createInterface } from 'node:readline';
import type { KubeConfig } from '@kubernetes/client-node';
import { RateLimiter } from './rate-limiter.ts';
import type { Lane } from './rate-limiter.ts';
import type { WatchEvent } from './objects.ts';

/** The client-side request rate when none is given: qps per second, with bursts of up to burst above it. */
export const RATE_LIMIT_DEFAULTS = { qps: 20, burst: 30 } as const;

export const FIELD_MANAGER = 'episodic-controller';
const MERGE_PATCH = 'application/merge-patch+json';

/** An error answer from the API server (or a transport failure: status 0). */
export class KubeError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  /** The server's own message, without the request line. */
  readonly detail: string;
  constructor(status: number, reason: string | undefined, message: string, detail?: string) {
    super(message);
    this.name = 'KubeError';
    this.status = status;
    this.reason = reason;
    this.detail = detail ?? message;
  }
}

export function isStatus(err: unknown, status: number): boolean {
  return err instanceof KubeError && err.status === status;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  contentType?: string;
  lane?: Lane;
  timeoutMs?: number;
}

export interface WatchHandle {
  /** Ends the stream; `done` then rejects with the given reason (or resolves if none). */
  abort(reason?: Error): void;
  /** Resolves when the server ends the stream normally, rejects on any error. */
  done: Promise<void>;
}

export interface KubeClientOptions {
  qps?: number;
  burst?: number;
  userAgent?: string;
  /** Auth headers are re-read this often so rotating tokens (in-cluster, exec plugins) keep working. */
  authRefreshMs?: number;
  /** A request (not a watch) with no answer for this long fails; its connection is closed. */
  requestTimeoutMs?: number;
  /** Requests (not watches) in flight at once; more wait. Bounds memory when QPS is unlimited. */
  maxInFlight?: number;
}

export class KubeClient {
  readonly server: URL;
  readonly limiter: RateLimiter;
  private readonly kubeConfig: KubeConfig;
  private readonly agent: http.Agent;
  private readonly userAgent: string;
  private readonly authRefreshMs: number;
  private readonly requestTimeoutMs: number;
  private auth: { headers: Record<string, string>; at: number } | undefined;
  private readonly openWatches = new Set<http.ClientRequest>();
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly slotWaiters: Array<() => void> = [];

  private constructor(kubeConfig: KubeConfig, agent: http.Agent, opts: KubeClientOptions) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.kubeConfig = kubeConfig;
    this.server = new URL(cluster.server);
    this.agent = agent;
    this.userAgent = opts.userAgent ?? 'episodic-controller';
    this.authRefreshMs = opts.authRefreshMs ?? 60_000;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.maxInFlight = opts.maxInFlight ?? 32;
    this.limiter = new RateLimiter({
      qps: opts.qps ?? RATE_LIMIT_DEFAULTS.qps,
      burst: opts.burst ?? RATE_LIMIT_DEFAULTS.burst,
    });
  }

  static async create(kubeConfig: KubeConfig, opts: KubeClientOptions = {}): Promise<KubeClient> {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const tls: https.RequestOptions = {};
    await kubeConfig.applyToHTTPSOptions(tls);
    const common = { keepAlive: true, keepAliveMsecs: 30_000, maxSockets: 256 };
    const agent = cluster.server.startsWith('https:')
      ? new https.Agent({
          ...common,
          ca: tls.ca,
          cert: tls.cert,
          key: tls.key,
          pfx: tls.pfx,
          passphrase: tls.passphrase,
          rejectUnauthorized: tls.rejectUnauthorized,
          servername: tls.servername,
        })
      : new http.Agent(common);
    return new KubeClient(kubeConfig, agent, opts);
  }

  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    await this.limiter.take(opts.lane ?? 'work');
    // A finishing request hands its slot straight to the next waiter, so the cap is never exceeded.
    if (this.inFlight >= this.maxInFlight) await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    else this.inFlight++;
    try {
      return await this.send<T>(method, path, opts);
    } finally {
      const next = this.slotWaiters.shift();
      if (next) next();
      else this.inFlight--;
    }
  }

  private async send<T>(method: string, path: string, opts: RequestOptions): Promise<T> {
    const headers = await this.headers();
    const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    if (payload) {
      headers['Content-Type'] = opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    const req = this.transport().request(this.url(path, opts.query), { method, headers, agent: this.agent });
    const timeoutMs = opts.timeoutMs ?? this.requestTimeoutMs;
    req.setTimeout(timeoutMs, () =>
      req.destroy(new KubeError(0, 'Timeout', `${method} ${path}: no answer in ${timeoutMs} ms`)),
    );
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      req.once('response', resolve);
      req.once('error', (err) =>
        reject(err instanceof KubeError ? err : new KubeError(0, 'Transport', `${method} ${path}: ${err.message}`)),
      );
      req.end(payload);
    });
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) throw errorFromBody(status, text, `${method} ${path}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get<T = unknown>(path: string, query?: Query, lane?: Lane): Promise<T> {
    return this.request<T>('GET', path, { query, lane });
  }

  create<T = unknown>(path: string, body: unknown, lane?: Lane): Promise<T> {
    return this.request<T>('POST', path, { body, lane, query: { fieldManager: FIELD_MANAGER } });
  }

  mergePatch<T = unknown>(path: string, body: unknown, lane?: Lane): Promise<T> {
    return this.request<T>('PATCH', path, {
      body,
      lane,
      contentType: MERGE_PATCH,
      query: { fieldManager: FIELD_MANAGER },
    });
  }

  delete<T = unknown>(path: string, body?: unknown, lane?: Lane): Promise<T> {
    return this.request<T>('DELETE', path, { body, lane });
  }

  /**
   * One watch request; calls onEvent per line. Not retried here: the informer decides what an ending
   * means (relist after 410, backoff after errors, a watchdog for silent streams).
   */
  async watch<T>(path: string, query: Query, onEvent: (event: WatchEvent<T>) => void): Promise<WatchHandle> {
    await this.limiter.take('work');
    const headers = await this.headers();
    const req = this.transport().request(this.url(path, { ...query, watch: 'true' }), {
      method: 'GET',
      headers,
      agent: this.agent,
    });
    this.openWatches.add(req);
    let abortReason: Error | undefined;
    const done = new Promise<void>((resolve, reject) => {
      req.on('error', (err) => reject(abortReason ?? new KubeError(0, 'Transport', `watch ${path}: ${err.message}`)));
      req.once('close', () => this.openWatches.delete(req));
      req.once('response', (res) => {
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => reject(errorFromBody(status, Buffer.concat(chunks).toString('utf8'), `watch ${path}`)));
          res.on('error', reject);
          return;
        }
        const lines = createInterface({ input: res, crlfDelay: Infinity });
        // readline re-emits the response's errors; the response's own handler below reports them.
        lines.on('error', () => {});
        lines.on('line', (line) => {
          if (!line.trim()) return;
          let event: WatchEvent<T>;
          try {
            event = JSON.parse(line);
          } catch {
            return; // a torn line only happens when the stream breaks, which ends it anyway
          }
          onEvent(event);
        });
        res.on('error', (err) => reject(abortReason ?? new KubeError(0, 'Transport', `watch ${path}: ${err.message}`)));
        res.once('aborted', () =>
          reject(abortReason ?? new KubeError(0, 'Transport', `watch ${path}: connection aborted`)),
        );
        res.once('end', () => (abortReason ? reject(abortReason) : resolve()));
        res.once('close', () => {
          if (!res.complete)
            reject(abortReason ?? new KubeError(0, 'Transport', `watch ${path}: connection closed mid-stream`));
        });
      });
      req.end();
    });
    return {
      done,
      abort: (reason?: Error) => {
        abortReason = reason;
        req.destroy(reason);
      },
    };
  }

  /**
   * A GET whose body is a byte stream (a pod's log): the response once its status is 2xx, else the
   * server's error. Not client-node's Log: aborting its stream throws an uncaught AbortError, and it
   * drops the server's message on 4xx ("container is waiting to start"). `signal` ends the stream.
   */
  async stream(path: string, query: Query, signal: AbortSignal): Promise<http.IncomingMessage> {
    await this.limiter.take('work');
    const headers = { ...(await this.headers()), Accept: '*/*' };
    const req = this.transport().request(this.url(path, query), { method: 'GET', headers, agent: this.agent, signal });
    this.openWatches.add(req);
    req.once('close', () => this.openWatches.delete(req));
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      req.once('response', resolve);
      req.once('error', (err) => reject(new KubeError(0, 'Transport', `GET ${path}: ${err.message}`)));
      req.end();
    });
    // A stream error after this point ends the response; the caller sees 'error' or 'close' there.
    req.on('error', () => {});
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return res;
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    throw errorFromBody(status, Buffer.concat(chunks).toString('utf8'), `GET ${path}`);
  }

  /** Closes idle connections and open watches (shutdown). */
  close(): void {
    for (const req of this.openWatches) req.destroy();
    this.openWatches.clear();
    this.agent.destroy();
  }

  private transport(): typeof https | typeof http {
    return this.server.protocol === 'https:' ? https : http;
  }

  private url(path: string, query: Query = {}): URL {
    const base = this.server.pathname.replace(/\/$/, '');
    const url = new URL(this.server.origin + base + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  private async headers(): Promise<Record<string, string>> {
    if (!this.auth || Date.now() - this.auth.at > this.authRefreshMs) {
      const opts: https.RequestOptions & { headers?: Record<string, string> } = {};
      await this.kubeConfig.applyToHTTPSOptions(opts);
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (typeof opts.auth === 'string') headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
      this.auth = { headers, at: Date.now() };
    }
    return { ...this.auth.headers, Accept: 'application/json', 'User-Agent': this.userAgent };
  }
}

function errorFromBody(status: number, text: string, what: string): KubeError {
  try {
    const body = JSON.parse(text) as { reason?: string; message?: string };
    const detail = body.message ?? body.reason ?? '';
    return new KubeError(status, body.reason, `${what}: ${status} ${detail}`.trim(), detail);
  } catch {
    return new KubeError(status, undefined, `${what}: ${status} ${text.slice(0, 200)}`.trim());
  }
}
