// Ops in the 4 KiB termination message: kept in order while they fit their budget, the rest rejected with
// a message, and the episode's other facts intact.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPS_TERMINATION_BUDGET } from '../../controller/api/bounds.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { Op } from '../../controller/api/ops.ts';
import { decodeTerminationMessage, encodeTerminationMessage } from '../../controller/api/termination-message.ts';

const setOp = (i: number, size: number): Op => ({ op: 'set', key: `k${i}`, value: 'v'.repeat(size) });

test('termination message: ops that fit travel whole', () => {
  const ops: Op[] = [{ op: 'push', frames: ['next'] }, setOp(1, 10), { op: 'sleep', seconds: 5 }];
  const result = episodeResult({ exitCode: 0, costUSD: 0.5, message: 'm'.repeat(900), ops });
  const decoded = decodeTerminationMessage(encodeTerminationMessage(result));
  assert.deepEqual(decoded?.ops, ops);
  assert.equal(decoded?.costUSD, 0.5);
  assert.equal(decoded?.message, result.message);
});

test('termination message: ops past the budget are rejected in order, with a message; the result stays', () => {
  const ops = Array.from({ length: 12 }, (_, i) => setOp(i, 400));
  const result = episodeResult({ exitCode: 0, costUSD: 1.25, message: 'x'.repeat(1000), ops });
  const encoded = encodeTerminationMessage(result);
  assert.ok(Buffer.byteLength(encoded) <= 4096, `${Buffer.byteLength(encoded)} bytes`);
  const decoded = decodeTerminationMessage(encoded);
  assert.ok(decoded);
  const kept = decoded.ops?.length ?? 0;
  assert.ok(kept >= 4 && kept < 12, `kept ${kept}`);
  assert.deepEqual(decoded.ops, ops.slice(0, kept));
  assert.ok(Buffer.byteLength(JSON.stringify(decoded.ops)) <= OPS_TERMINATION_BUDGET);
  assert.match(
    decoded.opsRejected?.at(-1)?.message ?? '',
    new RegExp(`${12 - kept} ops from op ${kept + 1} on did not fit the termination message`),
  );
  assert.equal(decoded.costUSD, 1.25);
  assert.equal(decoded.exitCode, 0);
});

test('termination message: invalid ops written there cost the episode its ops, not its result', () => {
  const text = JSON.stringify({ exitCode: 0, costUSD: 2, ops: [{ op: 'rm', path: '/' }] });
  const decoded = decodeTerminationMessage(text);
  assert.equal(decoded?.costUSD, 2);
  assert.equal(decoded?.ops, undefined);
  assert.match(decoded?.opsRejected?.[0]?.message ?? '', /ops in the termination message were invalid/);
});
