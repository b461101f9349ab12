// Outputs, pure: how tags and the outputs file are read, the bounds (16 keys, C identifiers, 1 KiB per
// value, 4 KiB in all) with what is dropped named, the merge rule, and rendering into prompts verbatim.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  boundOutputs,
  lookupOutput,
  mergeOutputs,
  outputScope,
  outputsNote,
  outputTags,
  parseOutputsFile,
} from '../../controller/api/outputs.ts';
import { renderPromptNoting } from '../../controller/executors/prompt.ts';

test('outputTags: every tag of the final answer in order, values trimmed, quotes of either kind', () => {
  const cases: Array<[string | undefined, Array<[string, string]>]> = [
    [undefined, []],
    ['no tags here', []],
    ['<output name="FILES">a.ts b.ts</output>', [['FILES', 'a.ts b.ts']]],
    [
      'x <output name=\'A\'>\n  one\n</output> y <output name="B">two\nlines</output>',
      [
        ['A', 'one'],
        ['B', 'two\nlines'],
      ],
    ],
    [
      '<output name="A">1</output><output name="A">2</output>',
      [
        ['A', '1'],
        ['A', '2'],
      ],
    ],
    ['<output name="A">never closed', []],
    ['<output name="bad key">v</output>', [['bad key', 'v']]],
  ];
  for (const [text, want] of cases) assert.deepEqual(outputTags(text), want, String(text));
});

test('parseOutputsFile: KEY=VALUE lines (blank and # skipped, = in values kept) or one JSON object', () => {
  const cases: Array<[string, Array<[string, string]>, string[]]> = [
    ['', [], []],
    [
      'A=1\n\n# note\nB=x=y\r\nC=\n',
      [
        ['A', '1'],
        ['B', 'x=y'],
        ['C', ''],
      ],
      [],
    ],
    ['just words\nA=1', [['A', '1']], ['line 1 of $EPISODIC_OUTPUTS is not KEY=VALUE']],
    [
      '{"A":"1","N":2,"O":{"x":true}}',
      [
        ['A', '1'],
        ['N', '2'],
        ['O', '{"x":true}'],
      ],
      [],
    ],
    ['{"A":', [], ['$EPISODIC_OUTPUTS is not valid JSON']],
    ['  {}', [], []],
  ];
  for (const [text, pairs, problems] of cases) assert.deepEqual(parseOutputsFile(text), { pairs, problems }, text);
  assert.deepEqual(parseOutputsFile('[1,2]').problems, ['line 1 of $EPISODIC_OUTPUTS is not KEY=VALUE']);
});

test('boundOutputs: latest value per key; bad keys, big values, keys past 16 and bytes past 4 KiB dropped and named', () => {
  const kb = 'v'.repeat(1024);
  const cases: Array<{ name: string; pairs: Array<[string, string]>; kept: string[]; dropped: RegExp[] }> = [
    { name: 'empty', pairs: [], kept: [], dropped: [] },
    {
      name: 'later wins',
      pairs: [
        ['A', '1'],
        ['A', '2'],
      ],
      kept: ['A'],
      dropped: [],
    },
    {
      name: 'keys',
      pairs: [
        ['ok_1', 'x'],
        ['1bad', 'x'],
        ['has-dash', 'x'],
        ['__proto__', 'x'],
        ['k'.repeat(65), 'x'],
      ],
      kept: ['ok_1'],
      dropped: [/"1bad" \(not a C identifier\)/, /"has-dash"/, /"__proto__" \(reserved\)/, /longer than 64/],
    },
    {
      name: 'value over 1 KiB',
      pairs: [
        ['BIG', `${kb}x`],
        ['SMALL', 'y'],
      ],
      kept: ['SMALL'],
      dropped: [/"BIG" \(value of 1025 bytes > 1024\)/],
    },
    {
      name: 'multi-byte value counted in bytes',
      pairs: [['E', 'é'.repeat(513)]],
      kept: [],
      dropped: [/1026 bytes/],
    },
    {
      name: 'more than 16 keys',
      pairs: Array.from({ length: 18 }, (_, i): [string, string] => [`K${i}`, 'v']),
      kept: Array.from({ length: 16 }, (_, i) => `K${i}`),
      dropped: [/"K16" \(more than 16 keys\)/, /"K17"/],
    },
    {
      name: 'over 4 KiB in all',
      pairs: [
        ['A', kb],
        ['B', kb],
        ['C', kb],
        ['D', kb],
        ['E', 'small'],
      ],
      kept: ['A', 'B', 'C', 'E'],
      dropped: [/"D" \(over 4096 bytes in all\)/],
    },
  ];
  for (const c of cases) {
    const got = boundOutputs(c.pairs);
    assert.deepEqual(Object.keys(got.outputs ?? {}), c.kept, c.name);
    assert.equal(got.dropped.length, c.dropped.length, `${c.name}: ${got.dropped.join(', ')}`);
    for (const [i, re] of c.dropped.entries()) assert.match(got.dropped[i], re, c.name);
  }
  assert.equal(
    boundOutputs([
      ['A', '1'],
      ['A', '2'],
    ]).outputs?.A,
    '2',
  );
  assert.equal(boundOutputs([['N', 'a\0b']]).outputs?.N, 'a\uFFFDb', 'NUL cannot reach an env var or argv');
  assert.deepEqual(boundOutputs([], ['file unreadable']).dropped, ['file unreadable']);
});

test('outputsNote: what was dropped and what rendered empty, bounded', () => {
  assert.equal(outputsNote([]), undefined);
  assert.equal(
    outputsNote(['"X" (reserved)'], ['steps.plan.outputs.Y']),
    'outputs dropped: "X" (reserved); unknown outputs rendered empty: steps.plan.outputs.Y',
  );
  assert.ok((outputsNote(Array(100).fill('"LONG_KEY_NAME" (more than 16 keys)')) ?? '').length <= 500);
});

test('mergeOutputs: latest value per key; past the bounds the least recently published keys go first', () => {
  const cases: Array<
    [
      string,
      Record<string, string> | undefined,
      Record<string, string> | undefined,
      number,
      number,
      Record<string, string> | undefined,
    ]
  > = [
    ['nothing new', { A: '1' }, undefined, 16, 4096, { A: '1' }],
    ['nothing at all', undefined, {}, 16, 4096, undefined],
    ['first', undefined, { A: '1' }, 16, 4096, { A: '1' }],
    ['replace and add', { A: '1', B: '2' }, { A: '3', C: '4' }, 16, 4096, { B: '2', A: '3', C: '4' }],
    ['too many keys', { A: '1', B: '2' }, { C: '3' }, 2, 4096, { B: '2', C: '3' }],
    ['republished stays', { A: '1', B: '2' }, { A: '9', C: '3' }, 2, 4096, { A: '9', C: '3' }],
    ['too many bytes', { A: 'xxxx', B: 'y' }, { C: 'zz' }, 16, 6, { B: 'y', C: 'zz' }],
  ];
  for (const [name, prev, next, keys, bytes, want] of cases) {
    const got = mergeOutputs(prev, next, keys, bytes);
    assert.deepEqual(got, want, name);
    if (got) assert.deepEqual(Object.keys(got), Object.keys(want ?? {}), `${name}: order`);
  }
});

test('lookupOutput: steps and tasks by name (dashes and dots allowed), inherited names unknown', () => {
  const scope = outputScope([{ name: 'plan', outputs: { FILES: 'a.ts' } }, { name: 'run-tests' }], {
    'api.v2': { URL: 'http://x' },
    gone: undefined,
  });
  const cases: Array<[string, { value: string; known: boolean } | undefined]> = [
    ['task', undefined],
    ['steps.plan.outputs.FILES', { value: 'a.ts', known: true }],
    ['steps.plan.outputs.MISSING', { value: '', known: false }],
    ['steps.run-tests.outputs.X', { value: '', known: false }],
    ['tasks.api.v2.outputs.URL', { value: 'http://x', known: true }],
    ['tasks.gone.outputs.URL', { value: '', known: false }],
    ['tasks.other.outputs.URL', { value: '', known: false }],
    ['steps.constructor.outputs.toString', { value: '', known: false }],
    ['steps.plan.outputs.constructor', { value: '', known: false }],
    ['steps.plan.outputs', undefined],
  ];
  for (const [key, want] of cases) assert.deepEqual(lookupOutput(key, scope), want, key);
});

test('prompts: outputs rendered verbatim, never expanded again; unknown references empty and named once', () => {
  const hostile = '$(rm -rf /) `id` {{task}} {{steps.plan.outputs.FILES}}\nline2\uFFFD';
  const { prompt, unknown } = renderPromptNoting(
    'A={{steps.plan.outputs.EVIL}} B={{ tasks.api.outputs.URL }} C={{steps.plan.outputs.NOPE}}{{steps.plan.outputs.NOPE}} D={{other}}',
    {
      task: 't',
      episode: 1,
      maxEpisodes: 3,
      outputs: outputScope([{ name: 'plan', outputs: { EVIL: hostile, FILES: 'f' } }], { api: { URL: 'u' } }),
    },
  );
  assert.equal(prompt, `A=${hostile} B=u C= D={{other}}`);
  assert.deepEqual(unknown, ['steps.plan.outputs.NOPE']);
});
