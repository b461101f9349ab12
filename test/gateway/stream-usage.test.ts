// withStreamUsage (gateway/request-policy.ts): a streamed Chat Completions request is made to ask for its usage
// chunk; every other body goes upstream byte for byte.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isChatCall, withStreamUsage } from '../../controller/gateway/request-policy.ts';

describe('withStreamUsage', () => {
  const rows: Array<[string, string, unknown]> = [
    ['a stream without stream_options', '{"model":"m","stream":true}', { include_usage: true }],
    ['other stream_options are kept', '{"stream":true,"stream_options":{"x":1}}', { x: 1, include_usage: true }],
    [
      'include_usage false is overridden',
      '{"stream":true,"stream_options":{"include_usage":false}}',
      { include_usage: true },
    ],
  ];
  for (const [name, body, options] of rows)
    it(`${name}: asks for the usage`, () => {
      const out = JSON.parse(withStreamUsage(Buffer.from(body)).toString('utf8'));
      assert.deepEqual(out.stream_options, options);
      assert.deepEqual({ ...out, stream_options: undefined }, { ...JSON.parse(body), stream_options: undefined });
    });

  for (const [name, body] of [
    ['not a stream', '{"model":"m"}'],
    ['already asks', '{"stream":true,"stream_options":{"include_usage":true}}'],
    ['not JSON', '{"stream":true'],
    ['a JSON array', '[{"stream":true}]'],
  ])
    it(`${name}: the same bytes`, () => {
      const input = Buffer.from(body);
      assert.equal(withStreamUsage(input), input);
    });

  it('only an openai POST /v1/chat/completions is a chat call', () => {
    assert.equal(isChatCall('openai', 'POST', '/v1/chat/completions'), true);
    assert.equal(isChatCall('openai', 'POST', '/v1/responses'), false);
    assert.equal(isChatCall('openai', 'GET', '/v1/chat/completions'), false);
    assert.equal(isChatCall('anthropic', 'POST', '/v1/chat/completions'), false);
  });
});
