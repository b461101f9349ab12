// Numbers an agent reports are untrusted input: non-finite or absurd costs and token counts are refused
// where they are parsed, so a status can never overflow to Infinity (written as null) or poison a cap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';

function analyse(line: Record<string, unknown>, pricing?: { inputPerMTok: number; outputPerMTok: number }) {
  const analyzer = createOutputAnalyzer({ format: 'claude', promise: 'COMPLETE', pricing });
  analyzer.write(Buffer.from(`${JSON.stringify(line)}\n`), 'stdout');
  return analyzer.finish({ exitCode: 0 });
}

const result = (fields: Record<string, unknown>) => ({
  type: 'result',
  subtype: 'success',
  is_error: false,
  result: 'ok',
  ...fields,
});

test('a cost of 1e308, a negative one or one past $10,000 for an episode is not taken as spend', () => {
  for (const cost of [1e308, -5, 10_001])
    assert.equal(analyse(result({ total_cost_usd: cost })).costUSD, 0, String(cost));
  assert.equal(analyse(result({ total_cost_usd: 0.25 })).costUSD, 0.25);
});

test('absurd token counts are refused; a priced cost is capped at $10,000 for an episode', () => {
  const huge = analyse(result({ usage: { input_tokens: 1e20, output_tokens: 5 } }));
  assert.deepEqual([huge.tokens.input, huge.tokens.output], [0, 5]);
  const priced = analyse(result({ usage: { input_tokens: 9e9, output_tokens: 0 } }), {
    inputPerMTok: 10_000,
    outputPerMTok: 1,
  });
  assert.equal(priced.costUSD, 10_000);
  assert.ok(Number.isFinite(priced.costUSD));
});
