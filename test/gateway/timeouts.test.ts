// The gateway's time bounds (issue 29 §1, api/bounds.ts GATEWAY_*_TIMEOUT_MS, made short here): against real
// upstreams that stall, the agent gets a 504 in its provider's shape when no answer starts, or its stream is
// ended when one stops or never ends; the grant is left with nothing in flight and what passed is charged;
// and while one request stalls the gateway answers others.
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startGateway } from '../../controller/gateway/gateway.ts';
import type { Gateway } from '../../controller/gateway/gateway.ts';
import type { GrantSpec } from '../../controller/gateway/grants.ts';
import type { Provider } from '../../controller/gateway/usage.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';
import { USAGE } from '../model-server/scenarios.ts';
import { waitFor } from '../support/wait.ts';

const REAL_KEY = 'sk-real-timeout-key-DO-NOT-LEAK-0c3d';
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };
const BOUNDS = { headersMs: 300, idleMs: 300, requestMs: 1500 };

/**
 * A real upstream that stalls: `silent` accepts each request and never answers; `trickle` starts an event
 * stream and sends a ping every 50 ms for ever (never idle, never done). 'request' is emitted on each arrival.
 */
async function stallingServer(kind: 'silent' | 'trickle') {
  const arrived = new EventEmitter();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    req.resume();
    arrived.emit('request', req.headers);
    if (kind === 'silent') return;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const timer = setInterval(() => res.write('event: ping\ndata: {"type": "ping"}\n\n'), 50);
    timers.add(timer);
    res.on('close', () => clearInterval(timer));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrived,
    close: async () => {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const KEY_HEADER: Record<Provider, string> = {
  anthropic: 'x-api-key',
  openai: 'authorization',
  gemini: 'x-goog-api-key',
};
const auth = (p: Provider, token: string) => ({ [KEY_HEADER[p]]: p === 'openai' ? `Bearer ${token}` : token });
type ErrorBody = { type?: string; error: Record<string, unknown> };
const PATH: Record<Provider, string> = {
  anthropic: '/v1/messages',
  openai: '/v1/responses',
  gemini: '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse',
};

/** The answer as it ends: whole (complete) or cut by the gateway, with the bytes that arrived. */
function call(url: string, headers: Record<string, string>, body: object) {
  return new Promise<{ status: number; body: string; complete: boolean }>((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' } });
    req.on('response', (res: IncomingMessage) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body: text, complete: res.complete }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

// Without the bounds a stalled request would wait for ever: the suite's timeout makes that a failure.
describe('the gateway bounds the time of each request', { timeout: 20_000 }, () => {
  let server: ModelServer;
  let silent: Awaited<ReturnType<typeof stallingServer>>;
  let trickle: Awaited<ReturnType<typeof stallingServer>>;
  let gateway: Gateway;
  let n = 0;
  const grant = (provider: Provider, upstream: string) => {
    const spec: GrantSpec = {
      namespace: 'default',
      task: `timeout-${++n}`,
      episode: 1,
      provider,
      upstream,
      credentials: [{ name: 'main', value: REAL_KEY }],
      pricing: { '*': PRICE },
      leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
    };
    const token = gateway.grants.issue(spec);
    const send = () =>
      call(`${gateway.baseUrl(spec.namespace, spec.task)}${PATH[provider]}`, auth(provider, token), {
        model: 'm',
        stream: true,
        max_tokens: 10,
        messages: [],
      });
    return { send, metered: () => gateway.grants.get(token)?.metered };
  };

  before(async () => {
    server = await startModelServer();
    silent = await stallingServer('silent');
    trickle = await stallingServer('trickle');
    gateway = await startGateway({ host: '127.0.0.1', log: pino({ level: 'silent' }), timeouts: BOUNDS });
  });
  after(async () => {
    await gateway?.close();
    await Promise.all([silent?.close(), trickle?.close(), server?.close()]);
  });

  for (const [provider, shape] of [
    ['anthropic', (b: ErrorBody) => b.type === 'error' && b.error.type === 'timeout_error'],
    ['openai', (b: ErrorBody) => b.error.type === 'timeout' && b.error.code === 'timeout'],
    ['gemini', (b: ErrorBody) => b.error.code === 504 && b.error.status === 'DEADLINE_EXCEEDED'],
  ] as const)
    it(`${provider}: an upstream that never answers → 504 in its shape; nothing in flight, nothing metered`, async () => {
      const g = grant(provider, silent.url);
      const arrived = once(silent.arrived, 'request');
      const answer = await g.send();
      const [headers] = await arrived;
      assert.equal(String(headers[KEY_HEADER[provider]]).replace(/^Bearer /, ''), REAL_KEY);
      assert.equal(answer.status, 504, answer.body);
      const body = JSON.parse(answer.body);
      assert.ok(shape(body), answer.body);
      assert.match(JSON.stringify(body), /no answer from the upstream within 0\.3 s/);
      assert.deepEqual([g.metered()?.inFlight, g.metered()?.requests], [0, 0]);
    });

  it('a stream that stops mid-way is ended after the idle bound; what passed is charged', async () => {
    const g = grant('anthropic', `${server.url}/s/hang.timeout`);
    const answer = await g.send();
    assert.equal(answer.status, 200);
    assert.match(answer.body, /event: message_start/);
    assert.equal(answer.complete, false, 'the stream ended as if whole');
    const m = g.metered();
    assert.deepEqual([m?.inFlight, m?.requests], [0, 1]);
    const u = USAGE.anthropic;
    assert.deepEqual(m?.tokens, { input: u.input, output: 1, cacheRead: u.cacheRead, cacheWrite: u.cacheWrite });
  });

  it('a stream that never ends (pings, never idle) is cut at the whole-request bound', async () => {
    const g = grant('anthropic', trickle.url);
    const answer = await g.send();
    assert.equal(answer.status, 200);
    assert.ok(answer.body.split('event: ping').length > 2, 'the pings were not streamed through');
    assert.equal(answer.complete, false);
    assert.deepEqual([g.metered()?.inFlight, g.metered()?.requests], [0, 1]);
  });

  it('while one request stalls (default bounds), the gateway answers others; the agent leaving closes it', async () => {
    const patient = await startGateway({ host: '127.0.0.1', log: pino({ level: 'silent' }) });
    try {
      const spec = (task: string, upstream: string): GrantSpec => ({
        namespace: 'default',
        task,
        episode: 1,
        provider: 'anthropic',
        upstream,
        credentials: [{ name: 'main', value: REAL_KEY }],
        pricing: { '*': PRICE },
        leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
      });
      const stalled = patient.grants.issue(spec('stalled', silent.url));
      const arrived = once(silent.arrived, 'request');
      const req = httpRequest(`${patient.baseUrl('default', 'stalled')}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': stalled },
      });
      req.on('error', () => {}); // destroyed below, on purpose
      req.end('{}');
      await arrived;
      const other = patient.grants.issue(spec('other', `${server.url}/s/ok.timeout-other`));
      const answer = await call(
        `${patient.baseUrl('default', 'other')}/v1/messages`,
        { 'x-api-key': other },
        {
          stream: true,
        },
      );
      assert.equal(answer.status, 200);
      assert.match(answer.body, /event: message_stop/);
      assert.equal(patient.grants.get(stalled)?.metered.inFlight, 1);
      req.destroy();
      await waitFor('the stalled request to be closed', () => patient.grants.get(stalled)?.metered.inFlight === 0);
    } finally {
      await patient.close();
    }
  });
});
