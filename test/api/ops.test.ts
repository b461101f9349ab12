// parseOps: each line of $EPISODIC_OPS is one op or one rejection; a bad line never stops the others, and
// no rejection quotes what the agent wrote (a payload may hold a secret).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OP_LINE_MAX, OPS_FILE_MAX, OPS_PER_EPISODE_MAX, OPS_REJECTED_MAX } from '../../controller/api/bounds.ts';
import { parseOps } from '../../controller/api/ops.ts';

const line = (v: unknown) => JSON.stringify(v);

test('parseOps: every op of the issue parses to its shape', () => {
  const text = [
    line({ op: 'push', frames: ['write tests', { prompt: 'fix {{vars.file}}', vars: { file: 'a.ts' } }] }),
    line({ op: 'spawn', name: 'worker-1', prompt: 'do part 1', limits: { maxEpisodes: 3 }, labels: { team: 'a' } }),
    line({ op: 'spawn', name: 'worker-2', stack: ['b', 'a'] }),
    line({ op: 'send', to: 'planner', message: 'done' }),
    line({ op: 'set', key: 'plan.status', value: 'drafted' }),
    line({ op: 'del', key: 'plan.status' }),
    line({ op: 'sleep', seconds: 30 }),
    line({ op: 'sleep', until: '2026-11-26T08:00:00Z' }),
  ].join('\n');
  const parsed = parseOps(text);
  assert.deepEqual(parsed.rejected, []);
  assert.deepEqual(
    parsed.ops.map((o) => o.op),
    ['push', 'spawn', 'spawn', 'send', 'set', 'del', 'sleep', 'sleep'],
  );
  assert.deepEqual(parsed.ops[0], {
    op: 'push',
    frames: ['write tests', { prompt: 'fix {{vars.file}}', vars: { file: 'a.ts' } }],
  });
});

test('parseOps: a bad line is rejected with its number and why; the lines around it still apply', () => {
  const secret = 'sk-live-TOPSECRET';
  const cases: Array<[string, RegExp]> = [
    ['{not json', /not valid JSON/],
    ['[1,2]', /not a JSON object/],
    [line({ op: 'fork', bomb: true }), /unknown op "fork" \(known: push, spawn/],
    [line({ noop: 1 }), /unknown op \(known/],
    [line({ op: 'push', frames: [] }), /push: frames/],
    [line({ op: 'push', frames: ['a'], extra: secret }), /push: .*extra/],
    [line({ op: 'spawn', name: '../etc', prompt: 'x' }), /spawn: name: must be a lowercase DNS label/],
    [line({ op: 'spawn', name: 'ok', prompt: 'x', stack: ['y'] }), /exactly one of prompt or stack/],
    [line({ op: 'send', to: 'a/b', message: secret }), /send: to: must be a lowercase DNS label/],
    [line({ op: 'set', key: '../x', value: secret }), /set: key: must match/],
    [line({ op: 'set', key: 'k', value: 'v'.repeat(5000) }), /set: value/],
    [line({ op: 'set', key: 'k', value: { nested: secret } }), /set: value/],
    [line({ op: 'sleep' }), /exactly one of seconds or until/],
    [line({ op: 'sleep', seconds: -1 }), /sleep: seconds/],
    [line({ op: 'sleep', until: 'tomorrow' }), /sleep: until/],
    [`{"op":"set","key":"k","value":"${'x'.repeat(OP_LINE_MAX)}"}`, /line longer than 16384/],
  ];
  for (const [bad, why] of cases) {
    const text = [line({ op: 'set', key: 'before', value: '1' }), bad, line({ op: 'del', key: 'after' })].join('\n');
    const parsed = parseOps(text);
    assert.deepEqual(
      parsed.ops.map((o) => o.op),
      ['set', 'del'],
      bad.slice(0, 60),
    );
    assert.equal(parsed.rejected.length, 1, bad.slice(0, 60));
    assert.equal(parsed.rejected[0]?.line, 2);
    assert.match(parsed.rejected[0]?.message ?? '', why);
    assert.ok(!parsed.rejected[0]?.message.includes(secret), 'a rejection never quotes the payload');
    assert.ok((parsed.rejected[0]?.message.length ?? 0) <= 200);
  }
});

test('parseOps: blank lines and CRLF are fine; ops past the per-episode cap are rejected, rejections are bounded', () => {
  assert.deepEqual(parseOps(`\n\r\n${line({ op: 'del', key: 'a' })}\r\n\n`).ops, [{ op: 'del', key: 'a' }]);
  const many = Array.from({ length: OPS_PER_EPISODE_MAX + 20 }, (_, i) => line({ op: 'del', key: `k${i}` }));
  const parsed = parseOps(many.join('\n'));
  assert.equal(parsed.ops.length, OPS_PER_EPISODE_MAX);
  assert.equal(parsed.rejected.length, OPS_REJECTED_MAX);
  assert.match(parsed.rejected[0]?.message ?? '', /more than 32 ops in one episode/);
  assert.match(parsed.rejected.at(-1)?.message ?? '', /13 more lines rejected \(from line 40\)/);
});

test('parseOps: a huge file is read up to its cap and says the rest was not read', () => {
  const one = line({ op: 'set', key: 'k', value: 'v'.repeat(1000) });
  const text = Array.from({ length: Math.ceil(OPS_FILE_MAX / one.length) + 50 }, () => one).join('\n');
  const parsed = parseOps(text);
  assert.equal(parsed.ops.length, OPS_PER_EPISODE_MAX);
  assert.match(parsed.rejected.at(-1)?.message ?? '', /more lines rejected/);
  const binary = parseOps('\u0000\u0001\uffff'.repeat(10));
  assert.equal(binary.ops.length, 0);
  assert.match(binary.rejected[0]?.message ?? '', /not valid JSON/);
});
