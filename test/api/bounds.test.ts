// One rule per bound: where a message is cut and how, how dollars round, how tokens add up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  addTokens,
  BY_MAX,
  cleanName,
  clip,
  clipPrompt,
  clipStart,
  EPISODE_MESSAGE_MAX,
  headLine,
  LINE_MAX,
  PROMPT_CUT_MARK,
  requester,
  roundUSD,
  tailLine,
  totalTokens,
} from '../../controller/api/bounds.ts';

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

test('headLine and tailLine: one line, cut at the end or the start; blank text is no line', () => {
  const cases: Array<[string | undefined, number, string | undefined, string | undefined]> = [
    [undefined, 10, undefined, undefined],
    [' \n\t ', 10, undefined, undefined],
    ['a\n  b\tc', 10, 'a b c', 'a b c'],
    ['one two three', 7, 'one tw…', '… three'],
  ];
  for (const [text, max, head, tail] of cases) {
    assert.equal(headLine(text, max), head, `headLine(${JSON.stringify(text)}, ${max})`);
    assert.equal(tailLine(text, max), tail, `tailLine(${JSON.stringify(text)}, ${max})`);
  }
  assert.equal(headLine('x '.repeat(5000))?.length, LINE_MAX);
});

test('cleanName: characters outside a name become _, then the text is cut without a mark', () => {
  const cases: Array<[string, number, boolean, string]> = [
    ['octo-cat_1.2', 100, false, 'octo-cat_1.2'],
    ['a b/c\n$(x)', 100, false, 'a_b_c___x_'],
    ['ns/task', 100, true, 'ns/task'],
    ['ns/task', 100, false, 'ns_task'],
    ['abcdef', 3, false, 'abc'],
  ];
  for (const [text, max, slash, want] of cases) assert.equal(cleanName(text, max, { slash }), want, text);
});

test('requester: trimmed and cut to BY_MAX; missing, blank or not text is unknown', () => {
  const cases: Array<[unknown, string]> = [
    [' alice ', 'alice'],
    ['', 'unknown'],
    ['   ', 'unknown'],
    [undefined, 'unknown'],
    [42, 'unknown'],
    ['b'.repeat(BY_MAX + 5), 'b'.repeat(BY_MAX)],
  ];
  for (const [by, want] of cases) assert.equal(requester(by), want, String(by));
});

test('clipPrompt: text that fits is kept; longer text keeps exactly max characters, then the worded mark', () => {
  const cases: Array<[string, number, string]> = [
    ['', 3, ''],
    ['abc', 3, 'abc'],
    ['abcd', 3, `abc${PROMPT_CUT_MARK}`],
    ['a\nb', 1, `a${PROMPT_CUT_MARK}`],
  ];
  for (const [text, max, want] of cases) assert.equal(clipPrompt(text, max), want, `clipPrompt(${text}, ${max})`);
  assert.ok(PROMPT_CUT_MARK.startsWith('\n'), 'the mark stands on its own line');
});
