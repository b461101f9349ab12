// The console's HTTP server (node:http: a handful of routes): the page, a read-only JSON API over a
// ConsoleSource, server-sent events for live updates, and the actions: Resume, Suspend and Unsuspend.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { APP_CSS, appScript, FAVICON_SVG, INDEX_HTML, uplotCss, uplotScript } from './assets.ts';
import {
  authorized,
  COOKIE,
  hostAllowed,
  isLoopback,
  parseListen,
  SECURITY_HEADERS,
  sameOriginAction,
  tokenRequiredMessage,
} from './security.ts';
import type { ConsoleEvent, ConsoleSource } from './views.ts';
import { familyOf } from './family.ts';
import { firstPage, parseFirst } from './fleet-order.ts';

export interface ConsoleServerOptions {
  listen: string;
  source: ConsoleSource;
  /** Required beyond localhost; when set, required everywhere. */
  token?: string;
  /** Recorded in the audit trail as who resumed or suspended ("alice via console"). */
  who: string;
}

export interface RunningConsole {
  url: string;
  server: Server;
  close(): Promise<void>;
}

// A DNS-1123 name: what a task name or namespace may be, so a path can never leave the state dir.
const NAME = '[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?';
const TASK_PATH = new RegExp(`^/api/tasks/(${NAME})/(${NAME})$`);
const LOG_PATH = new RegExp(`^/api/tasks/(${NAME})/(${NAME})/episodes/(\\d{1,9})/log$`);
const ACTION_PATH = new RegExp(`^/api/tasks/(${NAME})/(${NAME})/(resume|suspend|unsuspend)$`);

export class ConsoleRefused extends Error {
  override name = 'ConsoleRefused';
}

export async function startConsole(opts: ConsoleServerOptions): Promise<RunningConsole> {
  const { host, port } = parseListen(opts.listen);
  const loopback = isLoopback(host);
  if (!loopback && !opts.token) throw new ConsoleRefused(tokenRequiredMessage(host));
  const [script, chartScript] = await Promise.all([appScript(), uplotScript()]);
  const chartCss = uplotCss();
  const streams = new Set<ServerResponse>();
  // Each event is numbered and /api/tasks says the number its rows include: the page drops what is older.
  const counter = { seq: 0 };
  const unsubscribe = opts.source.subscribe((event) => {
    counter.seq++;
    for (const res of streams) sendEvent(res, { ...event, seq: counter.seq });
  });
  const server = createServer((req, res) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    if (!hostAllowed(req, loopback)) return send(res, 421, 'text/plain', 'this console answers to localhost only\n');
    const url = new URL(req.url ?? '/', 'http://console');
    if (url.pathname === '/login' && opts.token) return login(res, url, opts.token);
    if (!authorized(req, opts.token))
      return send(res, 401, 'text/plain', 'a bearer token is required (or /login?token=…)\n');
    route(req, res, url, { ...opts, script, chartScript, chartCss, streams, counter }).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, 'text/plain', `${(err as Error).message}\n`);
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const heartbeat = setInterval(() => {
    for (const res of streams) res.write(': keep-alive\n\n');
  }, 15_000);
  heartbeat.unref();
  const bound = server.address() as AddressInfo;
  const shown = bound.address.includes(':') ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${shown}:${bound.port}`,
    server,
    close: async () => {
      clearInterval(heartbeat);
      unsubscribe();
      for (const res of streams) res.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface RouteContext extends ConsoleServerOptions {
  script: string;
  chartScript: string;
  chartCss: string;
  streams: Set<ServerResponse>;
  counter: { seq: number };
}

async function route(req: IncomingMessage, res: ServerResponse, url: URL, ctx: RouteContext): Promise<void> {
  const path = url.pathname;
  if (req.method === 'POST') {
    const m = ACTION_PATH.exec(path);
    if (!m) return send(res, 404, 'text/plain', 'not found\n');
    if (!sameOriginAction(req)) return send(res, 403, 'text/plain', 'cross-site request refused\n');
    const [ns, name] = [m[1] as string, m[2] as string];
    if (m[3] === 'resume') return resume(req, res, ctx, ns, name);
    return hold(res, ctx, ns, name, m[3] === 'suspend');
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'method not allowed\n');
  if (path === '/') return send(res, 200, 'text/html; charset=utf-8', INDEX_HTML);
  if (path === '/assets/app.js') return send(res, 200, 'text/javascript; charset=utf-8', ctx.script);
  if (path === '/assets/uplot.js') return send(res, 200, 'text/javascript; charset=utf-8', ctx.chartScript);
  if (path === '/assets/uplot.css') return send(res, 200, 'text/css; charset=utf-8', ctx.chartCss);
  if (path === '/assets/app.css') return send(res, 200, 'text/css; charset=utf-8', APP_CSS);
  if (path === '/assets/favicon.svg' || path === '/favicon.ico') return send(res, 200, 'image/svg+xml', FAVICON_SVG);
  if (path === '/api/tasks') return tasks(res, ctx, parseFirst(url.searchParams.get('first')));
  if (path === '/api/triggers') return json(res, 200, { items: await ctx.source.triggers() });
  if (path === '/api/budgets') return json(res, 200, { items: await ctx.source.budgets() });
  if (path === '/api/events') return events(req, res, ctx);
  const task = TASK_PATH.exec(path);
  if (task) {
    const detail = await ctx.source.detail(task[1] as string, task[2] as string);
    if (!detail) return json(res, 404, { error: 'no such task' });
    return json(res, 200, { ...detail, family: familyOf(ctx.source.rows(), detail.row.key) });
  }
  const log = LOG_PATH.exec(path);
  if (log) return serveLog(res, ctx, log[1] as string, log[2] as string, Number(log[3]), url.searchParams.has('raw'));
  send(res, 404, 'text/plain', 'not found\n');
}

/** The whole list with the event number it includes, or (?first=N) its first page in the fleet's order and a
 * summary of all: small, so the page draws before the whole list has come. */
function tasks(res: ServerResponse, ctx: RouteContext, first: number | undefined): void {
  const rows = ctx.source.rows();
  const body = first === undefined ? { items: rows } : firstPage(rows, first);
  json(res, 200, { ...body, seq: ctx.counter.seq });
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'Content-Type': type }).end(body);
}

function json(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

function login(res: ServerResponse, url: URL, token: string): void {
  const probe = { headers: { authorization: `Bearer ${url.searchParams.get('token') ?? ''}` } } as IncomingMessage;
  if (!authorized(probe, token)) {
    send(res, 401, 'text/plain', 'wrong token\n');
    return;
  }
  res.setHeader('Set-Cookie', `${COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`);
  res.writeHead(303, { Location: '/' }).end();
}

function events(req: IncomingMessage, res: ServerResponse, ctx: RouteContext): void {
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'keep-alive' });
  res.write('event: hello\ndata: {}\n\n');
  ctx.streams.add(res);
  req.on('close', () => ctx.streams.delete(res));
}

function sendEvent(res: ServerResponse, event: ConsoleEvent & { seq: number }): void {
  res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

/** An episode's log (a file's or a pod's): rendered text (?raw: the bytes) streamed as it comes, to the end of a
 * running episode. */
async function serveLog(res: ServerResponse, ctx: RouteContext, ns: string, name: string, n: number, raw: boolean) {
  const stop = new AbortController();
  res.once('close', () => stop.abort());
  const log = await ctx.source.episodeLog(ns, name, n, stop.signal, { raw });
  if (!log.ok) return send(res, log.status, 'text/plain; charset=utf-8', `${log.message}\n`);
  res.writeHead(200, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Log-Follow': log.follow ? '1' : '0',
  });
  log.text.pipe(res);
}

async function resume(req: IncomingMessage, res: ServerResponse, ctx: RouteContext, ns: string, name: string) {
  const body = await readBody(req, 4096);
  let episodes: number | undefined;
  try {
    const parsed = body ? (JSON.parse(body) as { episodes?: unknown }) : {};
    if (parsed.episodes !== undefined) {
      if (!Number.isInteger(parsed.episodes) || (parsed.episodes as number) < 1) throw new Error('episodes');
      episodes = parsed.episodes as number;
    }
  } catch {
    return json(res, 400, { error: 'expected {"episodes": N} or an empty body' });
  }
  const outcome = await ctx.source.resume(ns, name, ctx.who, episodes);
  if (outcome.ok) return json(res, 200, { token: outcome.token, by: ctx.who, note: outcome.note });
  json(res, outcome.status, { error: outcome.message });
}

/** Suspend / Unsuspend: the task's suspend hold, never its spec (api/hold.ts). */
async function hold(res: ServerResponse, ctx: RouteContext, ns: string, name: string, suspended: boolean) {
  const outcome = await ctx.source.setHold(ns, name, { suspended, by: ctx.who });
  if (outcome.ok) return json(res, 200, { suspended, by: ctx.who, note: outcome.note });
  json(res, outcome.status, { error: outcome.message });
}

function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > max) req.destroy(new Error('request body too large'));
    });
    req.on('end', () => resolve(body)).on('error', reject);
  });
}
