// The gateway between a client and the stand-in model server (test/model-server): the real key upstream and
// never the token, usage metered from the bytes that passed, and every hostile request refused unforwarded.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startGateway } from '../../controller/gateway/gateway.ts';
import type { Gateway } from '../../controller/gateway/gateway.ts';
import type { GrantSpec } from '../../controller/gateway/grants.ts';
import type { Provider } from '../../controller/gateway/usage.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';
import { TOOL_LOOP_USAGE, USAGE } from '../model-server/scenarios.ts';

const REAL_KEY = 'sk-real-upstream-key-DO-NOT-LEAK-91c2';
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Milliseconds from the request to the first body byte, and to the end. */
  firstByteMs: number;
}

function call(
  url: string,
  o: { method?: string; headers?: Record<string, string>; body?: string | Buffer; path?: string } = {},
): Promise<Answer> {
  const u = new URL(url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        method: o.method ?? 'POST',
        path: o.path ?? `${u.pathname}${u.search}`,
        headers: o.headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let firstByteMs = -1;
        res.on('data', (c: Buffer) => {
          if (firstByteMs < 0) firstByteMs = Date.now() - started;
          chunks.push(c);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            firstByteMs,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

describe('the model gateway against the stand-in model server', () => {
  let server: ModelServer;
  let gateway: Gateway;
  const grant = (
    provider: Provider,
    scenario: string,
    over: Partial<GrantSpec> = {},
  ): { token: string; spec: GrantSpec } => {
    const spec: GrantSpec = {
      namespace: 'default',
      task: `t-${provider}-${scenario}`.replace(/[^a-z0-9-]/g, '-'),
      episode: 1,
      provider,
      upstream: `${server.url}/s/${scenario}`,
      credentials: [{ name: 'main', value: REAL_KEY }],
      pricing: { '*': PRICE },
      leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
      ...over,
    };
    return { token: gateway.grants.issue(spec), spec };
  };
  const base = (spec: GrantSpec) => gateway.baseUrl(spec.namespace, spec.task);

  before(async () => {
    server = await startModelServer();
    gateway = await startGateway({ host: '127.0.0.1', log: pino({ level: 'silent' }), maxRequestBytes: 1024 * 1024 });
  });
  after(async () => {
    await gateway?.close();
    await server?.close();
  });

  const anthropicBody = (stream: boolean) =>
    JSON.stringify({ model: 'claude-sonnet-4-5', stream, max_tokens: 10, messages: [] });

  for (const stream of [true, false]) {
    it(`anthropic ${stream ? 'SSE' : 'JSON'}: the server sees the real key; the tokens metered are what it sent`, async () => {
      const scenario = `ok.gw-anthropic-${stream}`;
      const { token, spec } = grant('anthropic', scenario);
      const answer = await call(`${base(spec)}/v1/messages`, {
        headers: {
          'x-api-key': token,
          'content-type': 'application/json',
          authorization: 'Bearer agent-bearer',
          cookie: 'a=b',
        },
        body: anthropicBody(stream),
      });
      assert.equal(answer.status, 200, answer.body);
      assert.match(answer.body, stream ? /event: message_stop/ : /"stop_reason":"end_turn"/);
      const seen = server.requestsFor(scenario);
      assert.equal(seen.length, 1);
      assert.equal(seen[0]?.credential, REAL_KEY);
      assert.equal(seen[0]?.headers.authorization, undefined);
      assert.equal(seen[0]?.headers.cookie, undefined);
      assert.ok(!JSON.stringify(seen[0]?.headers).includes(token), 'the token went upstream');
      const m = gateway.grants.get(token)?.metered;
      const u = USAGE.anthropic;
      assert.deepEqual(m?.tokens, {
        input: u.input,
        output: u.output,
        cacheRead: u.cacheRead,
        cacheWrite: u.cacheWrite,
      });
      assert.equal(m?.requests, 1);
      assert.equal(m?.costUSD, 0.005257); // 1234×3 + 56×20 + 200×0.3 + 100×3.75 µ$
    });
  }

  it('anthropic count_tokens is forwarded and costs nothing', async () => {
    const { token, spec } = grant('anthropic', 'ok.gw-count');
    const answer = await call(`${base(spec)}/v1/messages/count_tokens`, {
      headers: { 'x-api-key': token },
      body: '{}',
    });
    assert.equal(answer.status, 200);
    assert.deepEqual(JSON.parse(answer.body), { input_tokens: 1234 });
    assert.equal(gateway.grants.get(token)?.metered.costUSD, 0);
  });

  for (const stream of [true, false]) {
    it(`openai Responses ${stream ? 'SSE' : 'JSON'}: bearer token swapped; input without its cached and cache-write shares`, async () => {
      const scenario = `ok.gw-openai-${stream}`;
      const { token, spec } = grant('openai', scenario);
      const answer = await call(`${base(spec)}/v1/responses`, {
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-5', stream, input: 'hi' }),
      });
      assert.equal(answer.status, 200, answer.body);
      assert.equal(server.requestsFor(scenario)[0]?.credential, REAL_KEY);
      const u = USAGE.openai;
      assert.deepEqual(gateway.grants.get(token)?.metered.tokens, {
        input: u.input - u.cached - u.cacheWrite,
        output: u.output,
        cacheRead: u.cached,
        cacheWrite: u.cacheWrite,
      });
    });
  }

  for (const stream of [true, false]) {
    it(`gemini ${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}: x-goog-api-key swapped, ?key= dropped`, async () => {
      const scenario = `ok.gw-gemini-${stream}`;
      const { token, spec } = grant('gemini', scenario);
      const call_ = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
      const answer = await call(
        `${base(spec)}/v1beta/models/gemini-2.5-pro:${call_}${stream ? '&' : '?'}key=${token}`,
        {
          body: JSON.stringify({ contents: [] }),
        },
      );
      assert.equal(answer.status, 200, answer.body);
      const seen = server.requestsFor(scenario)[0];
      assert.equal(seen?.credential, REAL_KEY);
      assert.equal(seen?.query, stream ? '?alt=sse' : '');
      const u = USAGE.gemini;
      assert.deepEqual(gateway.grants.get(token)?.metered.tokens, {
        input: u.prompt - u.cached,
        output: u.candidates + u.thoughts,
        cacheRead: u.cached,
        cacheWrite: 0,
      });
    });
  }

  it('an upstream error passes through as the provider sent it', async () => {
    const { token, spec } = grant('anthropic', 'overloaded.gw');
    const answer = await call(`${base(spec)}/v1/messages`, {
      headers: { 'x-api-key': token },
      body: anthropicBody(true),
    });
    assert.equal(answer.status, 529);
    assert.match(answer.body, /overloaded_error/);
  });

  describe('refused, nothing forwarded', () => {
    const forwarded = (scenario: string) => server.requestsFor(scenario).length;

    it('an unknown token: 401, plain text', async () => {
      const { spec } = grant('anthropic', 'ok.gw-unknown');
      const answer = await call(`${base(spec)}/v1/messages`, {
        headers: { 'x-api-key': 'episodic-gw-guess' },
        body: '{}',
      });
      assert.equal(answer.status, 401);
      assert.match(String(answer.headers['content-type']), /^text\/plain/);
      assert.match(answer.body, /unknown or expired token/);
      assert.equal(forwarded('ok.gw-unknown'), 0);
    });

    it("a finished episode's token: 401", async () => {
      const { token, spec } = grant('anthropic', 'ok.gw-expired');
      gateway.grants.revoke(token);
      const answer = await call(`${base(spec)}/v1/messages`, {
        headers: { 'x-api-key': token },
        body: anthropicBody(false),
      });
      assert.equal(answer.status, 401);
      assert.equal(forwarded('ok.gw-expired'), 0);
    });

    it("another task's token under this task's URL: 401", async () => {
      const mine = grant('anthropic', 'ok.gw-mine', { task: 'mine' });
      const theirs = grant('anthropic', 'ok.gw-theirs', { task: 'theirs' });
      const answer = await call(`${base(mine.spec)}/v1/messages`, {
        headers: { 'x-api-key': theirs.token },
        body: '{}',
      });
      assert.equal(answer.status, 401);
      assert.equal(forwarded('ok.gw-mine') + forwarded('ok.gw-theirs'), 0);
    });

    const hostile: Array<[string, string, number]> = [
      ['an absolute URL', 'http://evil.example/v1/messages', 401],
      ['a dot segment', '/v1/../v1/messages', 400],
      ['an encoded slash', '/v1%2fmessages', 400],
      ['a path no CLI calls', '/v1/files', 404],
    ];
    for (const [name, path, status] of hostile)
      it(`${name}: ${status}`, async () => {
        const { token, spec } = grant('anthropic', 'ok.gw-hostile');
        const prefix = path.startsWith('/') ? new URL(base(spec)).pathname : '';
        const answer = await call(base(spec), {
          path: `${prefix}${path}`,
          headers: { 'x-api-key': token },
          body: '{}',
        });
        assert.equal(answer.status, status, answer.body);
        assert.equal(forwarded('ok.gw-hostile'), 0);
      });

    it('a body over the limit (declared, or streamed without a length): 413', async () => {
      const { token, spec } = grant('anthropic', 'ok.gw-big');
      const big = Buffer.alloc(2 * 1024 * 1024, 'a');
      const declared = await call(`${base(spec)}/v1/messages`, { headers: { 'x-api-key': token }, body: big });
      assert.equal(declared.status, 413);
      const chunked = await call(`${base(spec)}/v1/messages`, {
        headers: { 'x-api-key': token, 'transfer-encoding': 'chunked' },
        body: big,
      });
      assert.equal(chunked.status, 413);
      assert.equal(server.requestsFor('ok.gw-big').filter((r) => r.status !== 404).length <= 1, true);
    });
  });

  describe('the hard stop', () => {
    it('refuses in the provider shape once the leash is spent; overshoot is the last request', async () => {
      let refusedWith: string | undefined;
      const { token, spec } = grant('anthropic', 'toolloop.gw-stop', {
        leash: { task: { costUSD: 0.8, tokens: 0, maxCostUSD: 1 }, others: [] },
        onRefused: (m) => (refusedWith = m),
      });
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        const a = await call(`${base(spec)}/v1/messages`, {
          headers: { 'x-api-key': token },
          body: anthropicBody(true),
        });
        statuses.push(a.status);
        if (a.status !== 200) {
          assert.deepEqual(JSON.parse(a.body).error.type, 'invalid_request_error');
          assert.match(JSON.parse(a.body).error.message, /budget exhausted: spent \$1\.0000 of maxCostUSD \$1/);
          break;
        }
      }
      // $0.05 a request (10k in × $3 + 1k out × $20 per MTok): 4 requests reach $1.00, the 5th is refused.
      assert.equal(TOOL_LOOP_USAGE.input * 3 + TOOL_LOOP_USAGE.output * 20, 50_000);
      assert.deepEqual(statuses, [200, 200, 200, 200, 400]);
      assert.equal(server.requestsFor('toolloop.gw-stop').length, 4);
      assert.equal(gateway.grants.get(token)?.metered.costUSD, 0.2);
      assert.match(refusedWith ?? '', /maxCostUSD/);
    });

    for (const [provider, status, shape] of [
      ['openai', 429, /"code":"insufficient_quota"/],
      ['gemini', 403, /"status":"PERMISSION_DENIED"/],
    ] as const)
      it(`${provider}: ${status} in its own shape`, async () => {
        const { token, spec } = grant(provider, 'ok.gw-none', {
          leash: { task: { costUSD: 2, tokens: 0, maxCostUSD: 1 }, others: [] },
        });
        const path = provider === 'openai' ? '/v1/responses' : '/v1beta/models/gemini-2.5-pro:generateContent';
        const answer = await call(`${base(spec)}${path}`, {
          headers: provider === 'openai' ? { authorization: `Bearer ${token}` } : { 'x-goog-api-key': token },
          body: '{}',
        });
        assert.equal(answer.status, status);
        assert.match(answer.body, shape);
        assert.equal(server.requestsFor('ok.gw-none').length, 0);
      });
  });
});
