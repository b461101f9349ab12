// The answers are the stand-in model server's, which copies the real APIs' shapes (../shared/agent-outputs/real).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  RETRY_DEFAULT_COOL_MS,
  USAGE_LIMIT_DEFAULT_PAUSE_MS,
  classifyAnswer,
  retryAfter,
  seenLimits,
} from '../../controller/gateway/upstream-signals.ts';
import type { Provider } from '../../controller/gateway/usage.ts';
import { anthropicReply } from '../model-server/anthropic.ts';
import { geminiReply } from '../model-server/gemini.ts';
import { openaiReply } from '../model-server/openai.ts';
import type { Reply } from '../model-server/reply.ts';
import type { Scenario } from '../model-server/scenarios.ts';

const nowS = 1_780_000_000;
const now = new Date(nowS * 1000);
const in2h = new Date((nowS + 7200) * 1000);

function reply(provider: Provider, scenario: Scenario): Reply {
  if (provider === 'anthropic') return anthropicReply(scenario, {}, 'r1', nowS);
  if (provider === 'openai') return openaiReply(scenario, {}, 'r1', nowS);
  return geminiReply(scenario, 'gemini-2.5-pro', false);
}

function classify(provider: Provider, scenario: Scenario) {
  const r = reply(provider, scenario);
  if (r.kind !== 'json') return classifyAnswer(provider, 200, r.headers ?? {}, '', now);
  return classifyAnswer(provider, r.status, r.headers ?? {}, JSON.stringify(r.body), now);
}

describe('classifyAnswer: what an answer means for its credential', () => {
  const rows: Array<[Provider, Scenario, string, Date | undefined]> = [
    ['anthropic', 'ok', 'ok', undefined],
    ['anthropic', 'ratelimit', 'retry', new Date(now.getTime() + 1000)],
    ['anthropic', 'overloaded', 'retry', new Date(now.getTime() + RETRY_DEFAULT_COOL_MS)],
    ['anthropic', 'usage', 'usage-limit', in2h],
    ['anthropic', 'usage7d', 'usage-limit', in2h],
    ['anthropic', 'usagenoreset', 'usage-limit', new Date(now.getTime() + USAGE_LIMIT_DEFAULT_PAUSE_MS)],
    [
      'anthropic',
      'apilimit',
      'usage-limit',
      new Date(`${new Date((nowS + 3 * 86_400) * 1000).toISOString().slice(0, 10)}T00:00:00Z`),
    ],
    ['anthropic', 'server500', 'other', undefined],
    ['anthropic', 'auth401', 'other', undefined],
    ['anthropic', 'bad400', 'other', undefined],
    ['openai', 'ok', 'ok', undefined],
    ['openai', 'usage', 'usage-limit', in2h],
    ['openai', 'usagenoreset', 'usage-limit', new Date(now.getTime() + USAGE_LIMIT_DEFAULT_PAUSE_MS)],
    ['openai', 'billing', 'retry', new Date(now.getTime() + RETRY_DEFAULT_COOL_MS)],
    ['openai', 'bad400', 'other', undefined],
    ['gemini', 'ok', 'ok', undefined],
    ['gemini', 'overloaded', 'retry', new Date(now.getTime() + RETRY_DEFAULT_COOL_MS)],
    ['gemini', 'ratelimit', 'retry', new Date(now.getTime() + RETRY_DEFAULT_COOL_MS)],
    // A per-day quota resets at midnight Pacific: 1_780_000_000 is 2026-05-28T20:26:40Z, 13:26 PDT.
    ['gemini', 'usage', 'usage-limit', new Date('2026-05-29T07:00:00Z')],
    ['gemini', 'usage3d', 'usage-limit', new Date(now.getTime() + 3 * 86_400_000)],
    ['gemini', 'auth401', 'other', undefined],
  ];
  for (const [provider, scenario, kind, when] of rows)
    it(`${provider} ${scenario} → ${kind}`, () => {
      const s = classify(provider, scenario);
      assert.equal(s.kind, kind);
      if (s.kind === 'usage-limit') assert.deepEqual(s.resetAt, when);
      if (s.kind === 'retry') assert.deepEqual(s.until, when);
      if (s.kind === 'usage-limit' || s.kind === 'retry') assert.ok(s.error.length > 0 && s.error.length <= 500);
    });

  it('the error kept for status holds no key the provider echoed, nor any key-like word', () => {
    const body = JSON.stringify({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down, my-pool-value-123456 and sk-proj-abcdefghijkl' },
    });
    const s = classifyAnswer('anthropic', 429, {}, body, now, ['my-pool-value-123456']);
    assert.equal(s.kind === 'retry' && s.error, '429 rate_limit_error: slow down, [redacted] and [redacted]');
  });

  it('an error body that is not JSON is classified by its status alone', () => {
    assert.equal(classifyAnswer('anthropic', 529, {}, '<html>', now).kind, 'retry');
    assert.equal(classifyAnswer('anthropic', 503, {}, 'upstream connect error', now).kind, 'other');
  });
});

describe('the rate-limit headers', () => {
  it('anthropic-ratelimit-*: remaining and limit of requests and tokens, the later reset', () => {
    const h = {
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '49',
      'anthropic-ratelimit-requests-reset': '2026-05-28T20:27:00Z',
      'anthropic-ratelimit-tokens-limit': '40000',
      'anthropic-ratelimit-tokens-remaining': '1000',
      'anthropic-ratelimit-tokens-reset': '2026-05-28T20:27:30Z',
    };
    assert.deepEqual(seenLimits(h, now), {
      requestsLimit: 50,
      requestsRemaining: 49,
      tokensLimit: 40000,
      tokensRemaining: 1000,
      resetAt: new Date('2026-05-28T20:27:30Z'),
    });
  });

  it('x-ratelimit-* with durations', () => {
    const h = {
      'x-ratelimit-limit-requests': '500',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '6m0s',
      'x-ratelimit-reset-tokens': '250ms',
    };
    assert.deepEqual(seenLimits(h, now), {
      requestsLimit: 500,
      requestsRemaining: 0,
      resetAt: new Date(now.getTime() + 360_000),
    });
  });

  it('none: undefined; junk values are not figures', () => {
    assert.equal(seenLimits({ 'content-type': 'application/json' }, now), undefined);
    assert.equal(seenLimits({ 'x-ratelimit-remaining-requests': 'lots' }, now), undefined);
  });

  it('retry-after: seconds or an HTTP date', () => {
    assert.deepEqual(retryAfter({ 'retry-after': '7' }, now), new Date(now.getTime() + 7000));
    assert.deepEqual(
      retryAfter({ 'retry-after': 'Thu, 28 May 2026 20:30:00 GMT' }, now),
      new Date('2026-05-28T20:30:00Z'),
    );
    assert.equal(retryAfter({ 'retry-after': 'soon' }, now), undefined);
  });
});
