// The upstream is fixed by the AgentCredentials (issue 29 §1): a redirect the upstream answers is handed back to
// the agent as it came, never followed by the gateway, so the real key goes to no other host.
import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startGateway } from '../../controller/gateway/gateway.ts';
import type { Gateway } from '../../controller/gateway/gateway.ts';

const REAL_KEY = 'sk-ant-real-redirect-key-DO-NOT-LEAK-77e1';

/** A real HTTP server that records each request's path and headers and answers with `answer`. */
async function recordingServer(answer: (path: string) => { status: number; headers: Record<string, string> }) {
  const seen: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
  const server: Server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      const a = answer(req.url ?? '');
      res.writeHead(a.status, a.headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function post(url: string, token: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers: { 'x-api-key': token, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }));
  });
}

describe('an upstream redirect at the gateway', () => {
  let elsewhere: Awaited<ReturnType<typeof recordingServer>>;
  let upstream: Awaited<ReturnType<typeof recordingServer>>;
  let gateway: Gateway;

  before(async () => {
    elsewhere = await recordingServer(() => ({ status: 200, headers: { 'content-type': 'application/json' } }));
    // The path's /rNNN names the redirect status to answer.
    upstream = await recordingServer((path) => ({
      status: Number(/^\/r(\d{3})\//.exec(path)?.[1] ?? 500),
      headers: { location: `${elsewhere.url}${path}` },
    }));
    gateway = await startGateway({ host: '127.0.0.1', log: pino({ level: 'silent' }) });
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
    await elsewhere?.close();
  });

  for (const status of [301, 302, 307, 308])
    it(`a ${status} to another host is passed back, not followed: the other host sees nothing`, async () => {
      const token = gateway.grants.issue({
        namespace: 'default',
        task: `redirected-${status}`,
        episode: 1,
        provider: 'anthropic',
        upstream: `${upstream.url}/r${status}`,
        credentials: [{ name: 'main', value: REAL_KEY }],
        pricing: {},
        leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
      });
      const before = upstream.seen.length;
      const a = await post(`${gateway.baseUrl('default', `redirected-${status}`)}/v1/messages`, token);
      assert.equal(a.status, status, a.body.slice(0, 200));
      assert.equal(a.headers.location, `${elsewhere.url}/r${status}/v1/messages`);
      assert.equal(upstream.seen.length, before + 1);
      assert.equal(upstream.seen.at(-1)?.headers['x-api-key'], REAL_KEY);
      assert.deepEqual(elsewhere.seen, []);
      assert.ok(!JSON.stringify(a).includes(REAL_KEY));
    });
});
