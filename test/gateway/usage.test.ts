import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_EVENT_BYTES, SseSplitter, UsageMeter, usageOf } from '../../controller/gateway/usage.ts';
import type { Provider } from '../../controller/gateway/usage.ts';

const sse = (events: Array<{ event?: string; data: unknown }>, eol = '\n') =>
  events.map((e) => `${e.event ? `event: ${e.event}${eol}` : ''}data: ${JSON.stringify(e.data)}${eol}${eol}`).join('');

/** Feeds `text` in chunks of `size` bytes: the parsers must not care where a chunk ends. */
function meter(provider: Provider, contentType: string, text: string, size: number, model?: string) {
  const m = new UsageMeter(provider, contentType, model);
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) m.push(bytes.subarray(i, i + size));
  return m.done();
}

const anthropicStream = sse([
  {
    event: 'message_start',
    data: {
      type: 'message_start',
      message: {
        model: 'claude-sonnet-4-5',
        usage: { input_tokens: 1234, cache_creation_input_tokens: 100, cache_read_input_tokens: 200, output_tokens: 1 },
      },
    },
  },
  { event: 'content_block_delta', data: { type: 'content_block_delta', delta: { type: 'text_delta', text: 'hé ✓' } } },
  { event: 'message_delta', data: { type: 'message_delta', usage: { output_tokens: 56 } } },
  { event: 'message_stop', data: { type: 'message_stop' } },
]);

const cases: Array<{ name: string; provider: Provider; type: string; body: string; model?: string; want: object }> = [
  {
    name: 'anthropic stream: message_start, then message_delta replaces output',
    provider: 'anthropic',
    type: 'text/event-stream; charset=utf-8',
    body: anthropicStream,
    want: { model: 'claude-sonnet-4-5', input: 1234, output: 56, cacheRead: 200, cacheWrite: 100 },
  },
  {
    name: 'anthropic stream with CRLF line ends',
    provider: 'anthropic',
    type: 'text/event-stream',
    body: anthropicStream.replaceAll('\n', '\r\n'),
    want: { model: 'claude-sonnet-4-5', input: 1234, output: 56, cacheRead: 200, cacheWrite: 100 },
  },
  {
    name: 'anthropic JSON body',
    provider: 'anthropic',
    type: 'application/json',
    body: JSON.stringify({ type: 'message', model: 'claude-x', usage: { input_tokens: 7, output_tokens: 3 } }),
    want: { model: 'claude-x', input: 7, output: 3, cacheRead: 0, cacheWrite: 0 },
  },
  {
    name: 'anthropic count_tokens: no usage, nothing charged',
    provider: 'anthropic',
    type: 'application/json',
    body: JSON.stringify({ input_tokens: 1234 }),
    want: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  },
  {
    name: 'openai Responses stream: response.completed, cached share split out',
    provider: 'openai',
    type: 'text/event-stream',
    body: sse([
      { event: 'response.created', data: { type: 'response.created', response: { model: 'gpt-5' } } },
      { event: 'response.output_text.delta', data: { type: 'response.output_text.delta', delta: 'x' } },
      {
        event: 'response.completed',
        data: {
          type: 'response.completed',
          response: {
            model: 'gpt-5',
            usage: { input_tokens: 1500, input_tokens_details: { cached_tokens: 300 }, output_tokens: 70 },
          },
        },
      },
    ]),
    want: { model: 'gpt-5', input: 1200, output: 70, cacheRead: 300, cacheWrite: 0 },
  },
  {
    name: 'openai chat stream: usage on the last chunk, then [DONE]',
    provider: 'openai',
    type: 'text/event-stream',
    body: `${sse([
      { data: { object: 'chat.completion.chunk', model: 'gpt-4o', choices: [{ delta: { content: 'a' } }] } },
      {
        data: {
          object: 'chat.completion.chunk',
          model: 'gpt-4o',
          choices: [],
          usage: { prompt_tokens: 20, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4 } },
        },
      },
    ])}data: [DONE]\n\n`,
    want: { model: 'gpt-4o', input: 16, output: 5, cacheRead: 4, cacheWrite: 0 },
  },
  {
    name: 'openai chat JSON body',
    provider: 'openai',
    type: 'application/json',
    body: JSON.stringify({
      object: 'chat.completion',
      model: 'gpt-4o',
      usage: { prompt_tokens: 9, completion_tokens: 2 },
    }),
    want: { model: 'gpt-4o', input: 9, output: 2, cacheRead: 0, cacheWrite: 0 },
  },
  {
    name: 'gemini SSE: the last usageMetadata counts, thoughts are output',
    provider: 'gemini',
    type: 'text/event-stream',
    model: 'gemini-2.5-pro',
    body: sse([
      { data: { candidates: [], usageMetadata: { promptTokenCount: 1400 } } },
      {
        data: {
          candidates: [],
          usageMetadata: {
            promptTokenCount: 1400,
            cachedContentTokenCount: 400,
            candidatesTokenCount: 80,
            thoughtsTokenCount: 20,
          },
        },
      },
    ]),
    want: { model: 'gemini-2.5-pro', input: 1000, output: 100, cacheRead: 400, cacheWrite: 0 },
  },
  {
    name: 'gemini JSON array stream (no alt=sse)',
    provider: 'gemini',
    type: 'application/json',
    body: JSON.stringify([
      { usageMetadata: { promptTokenCount: 10 } },
      { usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 4 }, modelVersion: 'gemini-2.5-flash' },
    ]),
    want: { model: 'gemini-2.5-flash', input: 10, output: 4, cacheRead: 0, cacheWrite: 0 },
  },
  {
    name: 'a body that is no JSON: nothing charged',
    provider: 'openai',
    type: 'application/json',
    body: '<html>bad gateway</html>',
    want: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  },
];

describe('UsageMeter', () => {
  for (const c of cases) {
    for (const size of [1, 7, 1 << 20]) {
      it(`${c.name} (chunks of ${size} bytes)`, () => {
        assert.deepEqual(meter(c.provider, c.type, c.body, size, c.model), c.want);
      });
    }
  }

  it('a stream cut after message_start keeps what it said', () => {
    const cut = anthropicStream.slice(0, anthropicStream.indexOf('event: content_block_delta'));
    assert.deepEqual(meter('anthropic', 'text/event-stream', cut, 5), {
      model: 'claude-sonnet-4-5',
      input: 1234,
      output: 1,
      cacheRead: 200,
      cacheWrite: 100,
    });
  });

  it('negative, fractional or non-numeric counts are read as what they can be', () => {
    assert.deepEqual(usageOf('anthropic', { type: 'message_delta', usage: { output_tokens: -5 } }), { output: 0 });
    assert.deepEqual(usageOf('anthropic', { type: 'message_delta', usage: { output_tokens: '9' } }), { output: 0 });
    assert.deepEqual(usageOf('anthropic', { type: 'message_delta', usage: { output_tokens: 2.7 } }), { output: 2 });
  });
});

describe('SseSplitter', () => {
  it('joins multi-line data and ignores comments and events without data', () => {
    const s = new SseSplitter();
    assert.deepEqual(s.push(Buffer.from(': ping\n\nevent: x\ndata: a\ndata: b\n\nid: 3\n\n')), ['a\nb']);
    assert.deepEqual(s.push(Buffer.from('data: tail')), []);
    assert.deepEqual(s.end(), ['tail']);
  });

  it('a multi-byte character split across chunks arrives whole', () => {
    const s = new SseSplitter();
    const bytes = Buffer.from('data: ✓\n\n');
    assert.deepEqual([...s.push(bytes.subarray(0, 7)), ...s.push(bytes.subarray(7))], ['✓']);
  });

  it('a byte order mark before the first event is dropped, split or not; a later one is text', () => {
    const bytes = Buffer.from('\uFEFFdata: {"usage":1}\n\ndata: \uFEFF"usage"\n\n');
    for (let cut = 1; cut < 4; cut++) {
      const s = new SseSplitter('"usage');
      const got = [...s.push(bytes.subarray(0, cut)), ...s.push(bytes.subarray(cut)), ...s.end()];
      assert.deepEqual(got, ['{"usage":1}', '\uFEFF"usage"'], `cut at ${cut}`);
    }
  });

  it('finds a CRLF blank line split anywhere across chunks, and each event once', () => {
    const text = 'data: one\r\n\r\ndata: two\r\n\r\ndata: three\r\n\r\n';
    for (let cut = 1; cut < text.length; cut++) {
      const s = new SseSplitter();
      const got = [...s.push(Buffer.from(text.slice(0, cut))), ...s.push(Buffer.from(text.slice(cut))), ...s.end()];
      assert.deepEqual(got, ['one', 'two', 'three'], `cut at ${cut}`);
    }
  });
});

describe('SseSplitter: blank lines found by string search, events read only when they hold the needle', () => {
  /** Every event of `text`, fed in two chunks cut at `cut`. */
  const split = (text: string, cut: number, needle?: string) => {
    const s = new SseSplitter(needle);
    const bytes = Buffer.from(text);
    return [...s.push(bytes.subarray(0, cut)), ...s.push(bytes.subarray(cut)), ...s.end()];
  };

  it('LF, CRLF and mixed blank lines split anywhere: each event once, the CR before a blank line dropped', () => {
    const text = 'data: one\n\ndata: two\r\n\ndata: three\n\r\ndata: four\r\r\n\n: c\n\n\ndata: five';
    const want = ['one', 'two', 'three', 'four\r', 'five'];
    for (let cut = 0; cut <= text.length; cut++) assert.deepEqual(split(text, cut), want, `cut at ${cut}`);
  });

  it('with a needle, only the events that contain it, however the chunks fall', () => {
    const text =
      'data: {"type":"delta"}\n\ndata: {"usage":{"output_tokens":5}}\n\ndata: {"type":"stop"}\n\ndata: {"usage":1}';
    for (let cut = 0; cut <= text.length; cut++)
      assert.deepEqual(split(text, cut, '"usage'), ['{"usage":{"output_tokens":5}}', '{"usage":1}'], `cut at ${cut}`);
  });

  it('an event over MAX_EVENT_BYTES is dropped up to its blank line; the next one is read', () => {
    const s = new SseSplitter();
    const big = Buffer.alloc(64 * 1024, 'x');
    const got = [...s.push(Buffer.from('data: '))];
    for (let sent = 0; sent <= MAX_EVENT_BYTES; sent += big.length) got.push(...s.push(big));
    got.push(...s.push(Buffer.from('\n\ndata: after\n\n')), ...s.end());
    assert.deepEqual(got, ['after']);
  });
});

describe('UsageMeter on text that mentions usage', () => {
  it('a text delta quoting a usage object charges nothing extra', () => {
    const delta = {
      type: 'content_block_delta',
      delta: { type: 'text_delta', text: '"usage": {"output_tokens": 999}' },
    };
    const body = `event: content_block_delta\ndata: ${JSON.stringify(delta)}\n\n${anthropicStream}`;
    assert.deepEqual(
      meter('anthropic', 'text/event-stream', body, 3),
      meter('anthropic', 'text/event-stream', anthropicStream, 3),
    );
  });
});
