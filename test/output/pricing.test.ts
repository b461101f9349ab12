// Cost from tokens for agents that report none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { costFromTokens } from '../../controller/executors/output/pricing.ts';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';

const close = (actual: number, expected: number): void =>
  assert.ok(Math.abs(actual - expected) < 1e-12, `${actual} ≠ ${expected}`);

test('each token kind at its own rate, per million', () => {
  const tokens = { input: 1_000_000, output: 500_000, cacheRead: 2_000_000, cacheWrite: 100_000 };
  close(
    costFromTokens(tokens, { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 }),
    3 + 7.5 + 0.6 + 0.375,
  );
});

test('cache rates default to the input rate', () => {
  const tokens = { input: 1_000_000, output: 0, cacheRead: 1_000_000, cacheWrite: 1_000_000 };
  close(costFromTokens(tokens, { inputPerMTok: 2, outputPerMTok: 8 }), 6);
});

test('codex tokens summed over turns, priced; no pricing means cost 0', () => {
  const turn = (input: number, cached: number, output: number) =>
    `${JSON.stringify({ type: 'turn.completed', usage: { input_tokens: input, cached_input_tokens: cached, output_tokens: output } })}\n`;
  const stdout = `${JSON.stringify({ type: 'thread.started', thread_id: 't' })}\n${turn(1000, 400, 50)}${turn(2000, 1500, 70)}`;
  const pricing = { inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.125 };
  const priced = createOutputAnalyzer({ format: 'auto', promise: 'COMPLETE', pricing });
  priced.write(stdout, 'stdout');
  const a = priced.finish({ exitCode: 0 });
  assert.deepEqual(a.tokens, { input: 1100, output: 120, cacheRead: 1900, cacheWrite: 0 });
  close(a.costUSD, (1100 * 1.25 + 120 * 10 + 1900 * 0.125) / 1e6);
  const unpriced = createOutputAnalyzer({ format: 'auto', promise: 'COMPLETE' });
  unpriced.write(stdout, 'stdout');
  assert.equal(unpriced.finish({ exitCode: 0 }).costUSD, 0);
});

test('claude older cost_usd is read when total_cost_usd is absent', () => {
  const analyzer = createOutputAnalyzer({
    format: 'claude',
    promise: 'COMPLETE',
    pricing: { inputPerMTok: 100, outputPerMTok: 100 },
  });
  analyzer.write(
    `${JSON.stringify({ type: 'result', session_id: 's', is_error: false, result: 'ok', cost_usd: 0.42, usage: { input_tokens: 10 } })}\n`,
    'stdout',
  );
  assert.equal(analyzer.finish({ exitCode: 0 }).costUSD, 0.42);
});

test('codex cache writes are their own share of input_tokens, priced at the cache-write rate', () => {
  const usage = {
    input_tokens: 1500,
    cached_input_tokens: 300,
    cache_write_input_tokens: 50,
    output_tokens: 70,
    reasoning_output_tokens: 10,
  };
  const analyzer = createOutputAnalyzer({
    format: 'codex',
    promise: 'COMPLETE',
    pricing: { inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.125, cacheWritePerMTok: 1.5 },
  });
  analyzer.write(`${JSON.stringify({ type: 'turn.completed', usage })}\n`, 'stdout');
  const a = analyzer.finish({ exitCode: 0 });
  assert.deepEqual(a.tokens, { input: 1150, output: 70, cacheRead: 300, cacheWrite: 50 });
  close(a.costUSD, (1150 * 1.25 + 70 * 10 + 300 * 0.125 + 50 * 1.5) / 1e6);
});

test('a tiny episode cost is kept, not rounded away', () => {
  const analyzer = createOutputAnalyzer({
    format: 'codex',
    promise: 'COMPLETE',
    pricing: { inputPerMTok: 0.1, outputPerMTok: 0.4 },
  });
  analyzer.write(
    `${JSON.stringify({ type: 'turn.completed', usage: { input_tokens: 3, output_tokens: 1 } })}\n`,
    'stdout',
  );
  close(analyzer.finish({ exitCode: 0 }).costUSD, 7e-7); // 3 × 0.1 + 1 × 0.4 µ$
});
