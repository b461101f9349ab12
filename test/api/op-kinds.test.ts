// Op kinds declared once (issue 27 §3): STATUS_OPS, EXTERNAL_OPS and isBlackboardOp all come from OP_KINDS,
// and parseOps knows exactly the kinds of that table.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXTERNAL_OPS, isBlackboardOp, OP_KINDS, OP_NAMES, parseOps, STATUS_OPS } from '../../controller/api/ops.ts';
import type { OpHome, OpName } from '../../controller/api/ops.ts';

/** One valid line of each kind, and where its effect must live. */
const rows: Array<{ line: Record<string, unknown>; home: OpHome }> = [
  { line: { op: 'push', frames: ['next'] }, home: 'status' },
  { line: { op: 'sleep', seconds: 5 }, home: 'status' },
  { line: { op: 'set', key: 'k', value: 'v' }, home: 'blackboard' },
  { line: { op: 'del', key: 'k' }, home: 'blackboard' },
  { line: { op: 'spawn', name: 'child', prompt: 'p' }, home: 'handler' },
  { line: { op: 'send', to: 'peer', message: 'm' }, home: 'handler' },
];

for (const { line, home } of rows) {
  test(`op kind ${line.op}: lives in ${home}`, () => {
    const { ops, rejected } = parseOps(JSON.stringify(line));
    assert.deepEqual(rejected, []);
    const op = ops[0];
    assert.ok(op);
    assert.equal(OP_KINDS[op.op].home, home);
    assert.equal(STATUS_OPS.has(op.op), home === 'status', 'STATUS_OPS');
    assert.equal(EXTERNAL_OPS.has(op.op), home !== 'status', 'EXTERNAL_OPS: waits in pendingOps');
    assert.equal(isBlackboardOp(op), home === 'blackboard', 'isBlackboardOp');
  });
}

test('op kinds: the table, the rows above and the parser name the same kinds; the two sets split them', () => {
  const kinds = (names: Iterable<string>) => [...names].sort();
  assert.deepEqual(kinds(OP_NAMES), kinds(rows.map((r) => r.line.op as OpName)));
  assert.deepEqual(kinds([...STATUS_OPS, ...EXTERNAL_OPS]), kinds(OP_NAMES));
  const unknown = parseOps(JSON.stringify({ op: 'fork' })).rejected[0]?.message;
  assert.equal(unknown, `unknown op "fork" (known: ${OP_NAMES.join(', ')})`);
});
