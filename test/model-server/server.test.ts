// The stand-in model server on its own: each API answers each scenario as the real APIs would, with the
// headers the CLIs read, and close() ends streams that hang.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SCENARIOS } from './scenarios.ts';
import { startModelServer, type ModelServer } from './server.ts';

const NOW = 1_800_000_000;

const calls = {
  anthropic: (base: string, stream = true) =>
    fetch(`${base}/v1/messages?beta=true`, {
      method: 'POST',
      body: JSON.stringify({ model: 'claude-x', stream, messages: [] }),
    }),
  openai: (base: string) =>
    fetch(`${base}/v1/responses`, { method: 'POST', body: JSON.stringify({ model: 'gpt-5', stream: true }) }),
  gemini: (base: string, stream = true) =>
    fetch(`${base}/v1beta/models/gemini-2.5-pro:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`, {
      method: 'POST',
      body: '{}',
    }),
};

const STATUS: Record<string, [number, number, number]> = {
  // anthropic, openai, gemini
  overloaded: [529, 503, 503],
  ratelimit: [429, 429, 429],
  server500: [500, 500, 500],
  auth401: [401, 401, 400],
  forbidden403: [403, 403, 403],
  bad400: [400, 400, 400],
  toolong400: [400, 400, 400],
  usage: [429, 429, 429],
  usage7d: [429, 429, 429],
  usage3d: [429, 429, 429],
  usagenoreset: [429, 429, 429],
  apilimit: [400, 429, 429],
  billing: [400, 429, 403],
};

describe('stand-in model server', () => {
  let server: ModelServer;
  before(async () => {
    server = await startModelServer({ now: () => NOW });
  });
  after(() => server.close());

  for (const scenario of SCENARIOS) {
    it(`${scenario}: each API answers it`, async () => {
      const base = `${server.url}/s/${scenario}.t`;
      const want = STATUS[scenario];
      const responses = await Promise.all([calls.anthropic(base), calls.openai(base), calls.gemini(base)]);
      const statuses = responses.map((r) => r.status);
      assert.deepEqual(statuses, want ?? [200, 200, 200]);
      // Streams that hang or drop are not read to their end here.
      await Promise.all(
        responses.map((r) => (scenario === 'hang' || scenario === 'drop' ? r.body?.cancel() : r.arrayBuffer())),
      );
    });
  }

  it('the finished turn: the reply with its promise and the usage numbers, streaming and not', async () => {
    const base = `${server.url}/s/ok.turn`;
    const sse = await (await calls.anthropic(base)).text();
    assert.match(sse, /event: message_start\ndata: .*"input_tokens":1234.*"cache_read_input_tokens":200/);
    assert.match(sse, /"output_tokens":56/);
    assert.match(sse, /<promise>DONE<\/promise>/);
    const json = (await (await calls.anthropic(base, false)).json()) as {
      usage: { output_tokens: number };
      content: Array<{ text: string }>;
    };
    assert.equal(json.usage.output_tokens, 56);
    assert.match(json.content[0].text, /<promise>DONE/);
    assert.match(await (await calls.openai(base)).text(), /"cached_tokens":300,"cache_write_tokens":50/);
    const gemini = (await (await calls.gemini(base, false)).json()) as {
      usageMetadata: { thoughtsTokenCount: number };
    };
    assert.equal(gemini.usageMetadata.thoughtsTokenCount, 20);
    assert.ok(!(await (await calls.anthropic(`${server.url}/s/more.turn`)).text()).includes('<promise>'));
  });

  it('usage limits carry their reset: unified rate-limit headers, resets_at, a per-day quota', async () => {
    const a = await calls.anthropic(`${server.url}/s/usage.reset`);
    assert.equal(a.headers.get('anthropic-ratelimit-unified-status'), 'rejected');
    assert.equal(a.headers.get('anthropic-ratelimit-unified-representative-claim'), 'five_hour');
    assert.equal(a.headers.get('anthropic-ratelimit-unified-reset'), String(NOW + 7200));
    const week = await calls.anthropic(`${server.url}/s/usage3d.reset`);
    assert.equal(week.headers.get('anthropic-ratelimit-unified-7d-reset'), String(NOW + 3 * 86_400));
    const o = (await (await calls.openai(`${server.url}/s/usage.reset`)).json()) as {
      error: { type: string; resets_at: number };
    };
    assert.deepEqual([o.error.type, o.error.resets_at], ['usage_limit_reached', NOW + 7200]);
    const g = await (await calls.gemini(`${server.url}/s/usage.reset`)).text();
    assert.match(g, /GenerateRequestsPerDayPerProjectPerModel/);
    assert.equal(
      (await calls.anthropic(`${server.url}/s/usagenoreset.reset`)).headers.get('anthropic-ratelimit-unified-reset'),
      null,
    );
  });

  it('a hanging stream is held open until close(), which ends it', async () => {
    const own = await startModelServer();
    const res = await calls.anthropic(`${own.url}/s/hang.x`);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.match(new TextDecoder().decode(first.value), /message_start/);
    const pending = reader.read();
    await own.close();
    await assert.rejects(pending);
  });

  it('records every request under the name in its URL; unknown paths are answered 404 and recorded', async () => {
    await calls.openai(`${server.url}/s/ok.count`).then((r) => r.arrayBuffer());
    await fetch(`${server.url}/s/ok.count/v1/unknown`, { method: 'POST' }).then((r) => r.arrayBuffer());
    const seen = server.requestsFor('ok.count');
    assert.deepEqual(
      seen.map((r) => [r.api, r.status]),
      [
        ['openai', 'stream'],
        ['unknown', 404],
      ],
    );
  });
});
