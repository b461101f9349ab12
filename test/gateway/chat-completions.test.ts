// OpenAI Chat Completions through the gateway (issue 29 §1) against the stand-in model server: the bearer token
// is swapped for the real key, usage is metered from the stream's last chunk (stream_options.include_usage, which
// the gateway sets when the agent did not) or from the JSON body, and a stream's bytes reach the agent as they
// arrive, before the upstream has ended.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startGateway } from '../../controller/gateway/gateway.ts';
import type { Gateway } from '../../controller/gateway/gateway.ts';
import type { GrantSpec } from '../../controller/gateway/grants.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';
import { USAGE } from '../model-server/scenarios.ts';
import { waitFor } from '../support/wait.ts';

const REAL_KEY = 'sk-real-chat-upstream-key-DO-NOT-LEAK-4b7a';
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

/** A chat request through the gateway: the answer as it starts (status, headers), its body as it comes. */
function post(url: string, token: string, body: object): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', cookie: 'c=d' },
    });
    req.on('response', resolve);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function text(res: IncomingMessage): Promise<string> {
  let out = '';
  for await (const c of res) out += (c as Buffer).toString('utf8');
  return out;
}

/** The `data:` payloads of an SSE body. */
const payloads = (body: string) =>
  body
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));

// A buffering proxy would never pass the hanging stream's first chunk: the timeout turns that into a failure.
describe('OpenAI Chat Completions through the gateway', { timeout: 30_000 }, () => {
  let server: ModelServer;
  let gateway: Gateway;
  const grant = (scenario: string) => {
    const spec: GrantSpec = {
      namespace: 'default',
      task: `chat-${scenario}`.replace(/[^a-z0-9-]/g, '-'),
      episode: 1,
      provider: 'openai',
      upstream: `${server.url}/s/${scenario}`,
      credentials: [{ name: 'main', value: REAL_KEY }],
      pricing: { '*': PRICE },
      leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
    };
    const token = gateway.grants.issue(spec);
    return { token, url: `${gateway.baseUrl(spec.namespace, spec.task)}/v1/chat/completions` };
  };
  const chat = (stream: boolean, includeUsage = stream) => ({
    model: 'gpt-5',
    messages: [{ role: 'user', content: 'hi' }],
    ...(stream ? { stream: true } : {}),
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  });
  // Chat Completions reports no cache writes: the cached share of prompt_tokens is split out as cache reads.
  const u = USAGE.openai;
  const metered = { input: u.input - u.cached, output: u.output, cacheRead: u.cached, cacheWrite: 0 };

  before(async () => {
    server = await startModelServer();
    gateway = await startGateway({ host: '127.0.0.1', log: pino({ level: 'silent' }) });
  });
  after(async () => {
    await gateway?.close();
    await server?.close();
  });

  it('streamed with include_usage: chat.completion.chunk events and [DONE]; the real key upstream; usage metered', async () => {
    const { token, url } = grant('ok.chat-sse');
    const res = await post(url, token, chat(true));
    const body = await text(res);
    assert.equal(res.statusCode, 200, body);
    assert.match(String(res.headers['content-type']), /^text\/event-stream/);
    const events = payloads(body);
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.equal(chunks.at(-1).usage.prompt_tokens, u.input);
    const seen = server.requestsFor('ok.chat-sse');
    assert.deepEqual(
      seen.map((r) => [r.path, r.api, r.credential]),
      [['/v1/chat/completions', 'openai', REAL_KEY]],
    );
    assert.equal(seen[0]?.headers.cookie, undefined);
    assert.ok(!JSON.stringify(seen[0]?.headers).includes(token), 'the token went upstream');
    const m = gateway.grants.get(token)?.metered;
    assert.deepEqual(m?.tokens, metered);
    assert.equal(m?.requests, 1);
    assert.equal(m?.costUSD, 0.00509); // 1200×3 + 70×20 + 300×0.3 µ$
  });

  it('the JSON body form: a chat.completion, metered from its usage', async () => {
    const { token, url } = grant('ok.chat-json');
    const res = await post(url, token, chat(false));
    const body = JSON.parse(await text(res));
    assert.equal(res.statusCode, 200);
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.choices[0].finish_reason, 'stop');
    assert.equal(server.requestsFor('ok.chat-json')[0]?.credential, REAL_KEY);
    assert.deepEqual(gateway.grants.get(token)?.metered.tokens, metered);
  });

  it('streamed without include_usage: the gateway asks for it, so the stream is metered all the same', async () => {
    const { token, url } = grant('ok.chat-nousage');
    const res = await post(url, token, chat(true, false));
    const events = payloads(await text(res));
    assert.equal(events.at(-1), '[DONE]');
    // The usage chunk the gateway asked for comes through, as it would had the agent asked.
    assert.equal(JSON.parse(events.at(-2) as string).usage.prompt_tokens, u.input);
    const m = gateway.grants.get(token)?.metered;
    assert.equal(m?.requests, 1);
    assert.deepEqual(m?.tokens, metered);
  });

  it("a stream's first chunk reaches the agent while the upstream has not ended (not buffered)", async () => {
    const { token, url } = grant('hang.chat-stream');
    const res = await post(url, token, chat(true));
    assert.equal(res.statusCode, 200);
    // The stand-in sends the role chunk and then keeps the stream open: only a streaming proxy passes it on.
    const first = await new Promise<string>((resolve) => res.once('data', (c: Buffer) => resolve(c.toString())));
    assert.equal(JSON.parse(payloads(first)[0] as string).choices[0].delta.role, 'assistant');
    assert.equal(res.complete, false);
    res.destroy();
    // The agent went away: the request is over for the gateway too, and charged as one request.
    const grantNow = () => gateway.grants.get(token)?.metered;
    await waitFor(
      'the cut request to be closed and charged',
      () => grantNow()?.inFlight === 0 && grantNow()?.requests === 1,
    );
  });
});
