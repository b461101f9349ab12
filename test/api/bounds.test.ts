// One rule per bound: where a message is cut and how, how dollars round, how tokens add up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addTokens, clip, clipStart, EPISODE_MESSAGE_MAX, roundUSD, totalTokens } from '../../controller/api/bounds.ts';

test('clip and clipStart: text that fits is kept; longer text is cut to exactly max characters with one …', () => {
  const cases: Array<[string, number, string, string]> = [
    ['', 3, '', ''],
    ['abc', 3, 'abc', 'abc'],
    ['abcd', 3, 'ab…', '…cd'],
    ['abcdef', 1, '…', '…'],
  ];
  for (const [text, max, head, tail] of cases) {
    assert.equal(clip(text, max), head, `clip(${text}, ${max})`);
    assert.equal(clipStart(text, max), tail, `clipStart(${text}, ${max})`);
  }
  assert.equal(clip('x'.repeat(5000), EPISODE_MESSAGE_MAX).length, EPISODE_MESSAGE_MAX);
});

test('roundUSD: float noise goes, a tenth of a micro-dollar stays', () => {
  assert.equal(roundUSD(0.1 + 0.2), 0.3);
  assert.equal(roundUSD(0.1 + 0.0000004), 0.1000004);
  assert.equal(roundUSD(1 - 0.9), 0.1);
});

test('addTokens adds field by field; totalTokens counts input and output only', () => {
  const a = { input: 1, output: 2, cacheRead: 3, cacheWrite: 4 };
  const b = { input: 10, output: 20, cacheRead: 30, cacheWrite: 40 };
  assert.deepEqual(addTokens(a, b), { input: 11, output: 22, cacheRead: 33, cacheWrite: 44 });
  assert.equal(totalTokens(addTokens(a, b)), 33);
});
