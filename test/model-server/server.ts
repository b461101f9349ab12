// A stand-in for the three model APIs on 127.0.0.1 (random port): the only fake part of the real-agent
// tests. A CLI is pointed at `${url}/s/<scenario>` and gets that scenario's scripted answer; every request
// is recorded so tests can tell how often a CLI called (its own retries) and what it asked for.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { anthropicReply } from './anthropic.ts';
import { geminiReply } from './gemini.ts';
import { openaiReply } from './openai.ts';
import { openaiChatReply } from './openai-chat.ts';
import { json, send, type Reply } from './reply.ts';
import { parseScenario, type Scenario } from './scenarios.ts';

export interface RecordedRequest {
  method: string;
  /** The path after /s/<scenario>, without the query. */
  path: string;
  query: string;
  /** The name in the URL, e.g. oauth-usage. */
  scenarioName: string;
  api: 'anthropic' | 'openai' | 'gemini' | 'unknown';
  status: number | 'stream';
  /** The credential the request carried (x-api-key, a bearer token or x-goog-api-key): the gateway tests check it. */
  credential?: string;
  /** The request's own headers, lower-case (the gateway tests check what was stripped). */
  headers: Record<string, string | string[] | undefined>;
  /** The whole body arrived: false when the sender cut the request short (the gateway's size limit). */
  complete: boolean;
  /** When it arrived, ms since the epoch (the real clock: bench/gateway-hardstop times a loop from it). */
  at: number;
}

export interface ModelServer {
  url: string;
  requests: RecordedRequest[];
  /** Requests made under one scenario name (each test uses a name of its own to count its CLI's calls). */
  requestsFor(scenarioName: string): RecordedRequest[];
  /** Per credential: a request carrying that key gets this scenario whatever its URL says (pool tests). */
  keyScenarios: Map<string, Scenario>;
  close(): Promise<void>;
}

export interface ModelServerOptions {
  /** Seconds since the epoch; usage-limit resets are computed from it. Default: the real clock. */
  now?: () => number;
}

/** Bodies are read up to this size: a CLI sends its whole context, but nothing here needs more. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      try {
        const value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve(value && typeof value === 'object' ? value : {});
      } catch {
        resolve({});
      }
    });
    req.on('error', () => resolve({}));
  });
}

function route(
  scenario: Scenario,
  method: string,
  path: string,
  body: Record<string, unknown>,
  requestId: string,
  now: number,
): { api: RecordedRequest['api']; reply: Reply } {
  if (method === 'POST' && /^\/v1\/messages$/.test(path))
    return { api: 'anthropic', reply: anthropicReply(scenario, body, requestId, now) };
  if (method === 'POST' && /^\/v1\/messages\/count_tokens$/.test(path))
    return { api: 'anthropic', reply: json(200, { input_tokens: 1234 }) };
  if (method === 'POST' && /^\/(?:v1\/)?responses$/.test(path))
    return { api: 'openai', reply: openaiReply(scenario, body, requestId, now) };
  if (method === 'POST' && /^\/(?:v1\/)?chat\/completions$/.test(path))
    return { api: 'openai', reply: openaiChatReply(scenario, body, requestId, now) };
  const gemini = /^\/v1(?:beta|alpha|)\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/.exec(
    path,
  );
  if (method === 'POST' && gemini) {
    const [, model, call] = gemini;
    if (call === 'countTokens') return { api: 'gemini', reply: json(200, { totalTokens: 1400 }) };
    return {
      api: 'gemini',
      reply: geminiReply(scenario, decodeURIComponent(model), call === 'streamGenerateContent', requestId),
    };
  }
  return {
    api: 'unknown',
    reply: json(404, { error: { code: 404, message: `stand-in has no ${method} ${path}`, status: 'NOT_FOUND' } }),
  };
}

function credentialOf(req: IncomingMessage): string | undefined {
  const h = req.headers;
  const bearer = /^Bearer\s+(\S+)$/i.exec(String(h.authorization ?? ''))?.[1];
  return (h['x-api-key'] as string | undefined) ?? bearer ?? (h['x-goog-api-key'] as string | undefined);
}

export async function startModelServer(opts: ModelServerOptions = {}): Promise<ModelServer> {
  const now = opts.now ?? (() => Math.floor(Date.now() / 1000));
  const requests: RecordedRequest[] = [];
  const keyScenarios = new Map<string, Scenario>();
  const sockets = new Set<Socket>();
  let counter = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const m = /^\/s\/([^/]+)(\/.*)?$/.exec(url.pathname);
    const byKey = keyScenarios.get(credentialOf(req) ?? '');
    const scenario = m ? (byKey ?? parseScenario(m[1])) : undefined;
    const body = await readBody(req);
    const method = req.method ?? 'GET';
    const path = m?.[2] ?? url.pathname;
    if (!m || !scenario) {
      requests.push({
        method,
        path,
        query: url.search,
        scenarioName: m?.[1] ?? '',
        api: 'unknown',
        status: 404,
        credential: credentialOf(req),
        headers: req.headers,
        complete: req.complete,
        at: Date.now(),
      });
      send(res, json(404, { error: { message: `no scenario in ${url.pathname}; use /s/<scenario>/…` } }));
      return;
    }
    const requestId = `mock${++counter}`;
    const { api, reply } = route(scenario, method, path, body, requestId, now());
    requests.push({
      method,
      path,
      query: url.search,
      scenarioName: m[1],
      api,
      status: reply.kind === 'json' ? reply.status : 'stream',
      credential: credentialOf(req),
      headers: req.headers,
      complete: req.complete,
      at: Date.now(),
    });
    send(res, reply);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    requestsFor: (name) => requests.filter((r) => r.scenarioName === name),
    keyScenarios,
    close: async () => {
      // Hanging streams keep their sockets open: close() alone would wait for them forever.
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
