// Spend up a spawn tree: treeCost adds every descendant once (status.costUSD is a task's own spend), and a
// parent's cap (familyOverCost) counts its grandchildren and great-grandchildren through its children's views.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { familyOverCost, treeCost } from '../../controller/reconciler/children.ts';

/** A tree as parent → children, and each task's own spend. */
function cost(root: string, own: Record<string, number>, kids: Record<string, string[]>): number {
  return treeCost(
    root,
    (k) => own[k] ?? 0,
    (k) => kids[k] ?? [],
  );
}

describe('treeCost', () => {
  const table: Array<{ name: string; own: Record<string, number>; kids: Record<string, string[]>; want: number }> = [
    { name: 'no children: its own spend', own: { p: 0.5 }, kids: {}, want: 0.5 },
    { name: 'a child', own: { p: 0.5, c: 0.25 }, kids: { p: ['c'] }, want: 0.75 },
    { name: 'a grandchild (depth 2)', own: { p: 0.1, c: 0.2, g: 2 }, kids: { p: ['c'], c: ['g'] }, want: 2.3 },
    {
      name: 'depth 3 and siblings',
      own: { p: 0.1, a: 0.2, b: 0.3, aa: 0.4, aaa: 1 },
      kids: { p: ['a', 'b'], a: ['aa'], aa: ['aaa'] },
      want: 2,
    },
    { name: 'children not reconciled yet spend 0', own: { p: 0.1 }, kids: { p: ['c'], c: ['g'] }, want: 0.1 },
    { name: 'labels that loop: each task once', own: { p: 1, c: 2 }, kids: { p: ['c'], c: ['p', 'c'] }, want: 3 },
    { name: 'one child listed twice: once', own: { p: 1, c: 2 }, kids: { p: ['c', 'c'] }, want: 3 },
    { name: 'float sums are rounded', own: { p: 0.1, c: 0.2 }, kids: { p: ['c'] }, want: 0.3 },
  ];
  for (const row of table) it(row.name, () => assert.equal(cost('p', row.own, row.kids), row.want));
});

describe('familyOverCost with grandchildren', () => {
  const own = { gp: 0.01, c: 0.01, g: 2 };
  const kids = { gp: ['c'], c: ['g'] };
  const child = (name: string) => ({ name, phase: 'Succeeded' as const, costUSD: cost(name, own, kids) });

  it('the grandparent counts its grandchild through its child', () => {
    assert.equal(
      familyOverCost({ maxCostUSD: 1 }, own.gp, [child('c')]),
      'maxCostUSD 1 reached: $2.02 spent by the task ($0.01) and its children',
    );
  });

  it('under the cap: no hold; without a cap: none either', () => {
    assert.equal(familyOverCost({ maxCostUSD: 3 }, own.gp, [child('c')]), undefined);
    assert.equal(familyOverCost({}, own.gp, [child('c')]), undefined);
  });
});
