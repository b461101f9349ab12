// Tables for best-of-N's choice: the evidence order (succeeded > gates passed > inside scope > fewer changed
// lines > lower cost > earlier finish) and the judge's verdict checked against the candidates.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptStatus } from '../../controller/api/attempts.ts';
import { bestByEvidence, compareAttempts, judgeVerdict } from '../../controller/reconciler/attempts-select.ts';

const base: AttemptStatus = {
  number: 1,
  task: 't-attempt-1',
  phase: 'Succeeded',
  gatesPassed: true,
  insideScope: true,
  changedLines: 10,
  costUSD: 1,
  finishedAt: '2026-01-01T00:10:00Z',
};
const a = (over: Partial<AttemptStatus>): AttemptStatus => ({ ...base, ...over });

describe('compareAttempts: each rule decides only when the ones before it tie', () => {
  const table: Array<[string, AttemptStatus, AttemptStatus]> = [
    [
      'succeeded beats failed, even with more lines and cost',
      a({ changedLines: 900, costUSD: 9 }),
      a({ number: 2, phase: 'Failed', changedLines: 1 }),
    ],
    [
      'gates passed beats gates failing',
      a({ phase: 'Failed', changedLines: 50 }),
      a({ number: 2, phase: 'Failed', gatesPassed: false, changedLines: 1 }),
    ],
    ['inside scope beats outside', a({ changedLines: 99 }), a({ number: 2, insideScope: false, changedLines: 1 })],
    ['fewer changed lines', a({ changedLines: 5, costUSD: 3 }), a({ number: 2, changedLines: 6, costUSD: 1 })],
    ['lower cost', a({ costUSD: 0.5, finishedAt: '2026-01-01T00:20:00Z' }), a({ number: 2, costUSD: 0.6 })],
    ['earlier finish', a({ number: 3, finishedAt: '2026-01-01T00:05:00Z' }), a({ number: 2 })],
    ['all equal: the lower number', a({}), a({ number: 2 })],
    ['unknown lines lose to known ones', a({ number: 2 }), a({ changedLines: undefined })],
  ];
  for (const [name, better, worse] of table)
    it(name, () => {
      assert.ok(compareAttempts(better, worse) < 0);
      assert.ok(compareAttempts(worse, better) > 0);
    });
  it('bestByEvidence: the smaller passing one of three, one failing its gate', () => {
    const best = bestByEvidence([
      a({ number: 1, phase: 'NeedsReview', gatesPassed: false, changedLines: 2 }),
      a({ number: 2, changedLines: 40 }),
      a({ number: 3, changedLines: 12 }),
    ]);
    assert.equal(best?.number, 3);
  });
});

describe('judgeVerdict', () => {
  const c = [a({ number: 1 }), a({ number: 2 }), a({ number: 3 })];
  const table: Array<[string | undefined, string]> = [
    ['2', 'ok 2'],
    [' 3\n', 'ok 3'],
    [undefined, 'the judge wrote no output winner'],
    ['attempt 2', 'is no attempt'],
    ['4', 'is no attempt'],
    ['0', 'is no attempt'],
    ['2.0', 'is no attempt'],
  ];
  for (const [winner, want] of table)
    it(`${JSON.stringify(winner)} → ${want}`, () => {
      const v = judgeVerdict(winner, c);
      if (want.startsWith('ok')) assert.deepEqual(v, { ok: true, number: Number(want.slice(3)) });
      else assert.ok(!v.ok && v.why.includes(want), JSON.stringify(v));
    });
});
