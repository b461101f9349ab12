// Spend up a spawn tree: treeCost adds every descendant once (status.costUSD is a task's own spend), and a
// family's cap (judgeFamilyCap, issue 28) is predictive: no member starts an episode whose expected cost would
// take the family past an ancestor's maxCostUSD, running members counted at their expected cost.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { treeCost } from '../../controller/reconciler/children.ts';
import { judgeFamilyCap, judgeFamilyCaps } from '../../controller/reconciler/family-cap.ts';
import type { FamilyCap, FamilyVerdict } from '../../controller/reconciler/family-cap.ts';

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

const status = (over: Partial<AgentTaskStatus> = {}): AgentTaskStatus => ({ ...emptyStatus(), ...over });
/** A member that finished one episode costing `usd` and runs its second. */
const ranOnce = (usd: number) => status({ episodes: 2, costUSD: usd, currentEpisode: { number: 2, startedAt: '' } });
const cap = (over: Partial<FamilyCap> = {}): FamilyCap => ({
  task: 'p',
  own: false,
  maxCostUSD: 0.25,
  othersUSD: 0,
  running: [],
  finished: { costUSD: 0, episodes: 0 },
  ...over,
});

describe('judgeFamilyCap: the predictive rule over a family', () => {
  const table: Array<{
    name: string;
    cap: FamilyCap;
    status: AgentTaskStatus;
    declared?: number;
    kind: FamilyVerdict['kind'];
    message?: RegExp;
  }> = [
    {
      // The family: parent $0.01, this child $0.10 and its sibling $0.10 spent; each child's own cap
      // ($0.25, inherited) would let it run again; the family's next $0.10 would cross the parent's.
      name: 'a child whose next episode would take the family past its parent’s cap stops',
      cap: cap({ othersUSD: 0.11, finished: { costUSD: 0.11, episodes: 2 } }),
      status: status({ episodes: 1, costUSD: 0.1 }),
      kind: 'stop',
      message:
        /^maxCostUSD 0\.25 of p \(its family's cap\): \$0\.21 spent by p's family and the next episode is expected to cost \$0\.10$/,
    },
    {
      name: 'a child whose next episode fits goes',
      cap: cap({ othersUSD: 0.01, finished: { costUSD: 0.01, episodes: 1 } }),
      status: status({ episodes: 1, costUSD: 0.1 }),
      kind: 'go',
    },
    {
      name: 'the family’s spend reached the cap: stop, whatever the estimate',
      cap: cap({ othersUSD: 0.25, finished: { costUSD: 0.25, episodes: 3 } }),
      status: status(),
      kind: 'stop',
      message: /reached: \$0\.25 spent by p's family$/,
    },
    {
      name: 'a sibling running at its expected cost: wait for it to end',
      cap: cap({
        othersUSD: 0.11,
        running: [{ task: 'p-b', status: ranOnce(0.1) }],
        finished: { costUSD: 0.11, episodes: 2 },
      }),
      status: status(),
      kind: 'wait',
      message: /\$0\.11 spent by p's family \(\+ \$0\.10 expected of 1 episode\(s\) running\); waiting for them to end/,
    },
    {
      // The sibling's first episode has no history of its own: this task's $0.10 and the parent's $0.01 say $0.055.
      name: 'a sibling’s first episode running is estimated from this task’s history too',
      cap: cap({
        othersUSD: 0.01,
        running: [{ task: 'p-b', status: status({ episodes: 1, currentEpisode: { number: 1, startedAt: '' } }) }],
        finished: { costUSD: 0.01, episodes: 1 },
      }),
      status: status({ episodes: 1, costUSD: 0.1 }),
      kind: 'wait',
      message: /\(\+ \$0\.06 expected of 1 episode\(s\) running\)/,
    },
    {
      name: 'no cost known and a member running: wait, as a budget does',
      cap: cap({
        othersUSD: 0,
        running: [{ task: 'p', status: status({ episodes: 1, currentEpisode: { number: 1, startedAt: '' } }) }],
      }),
      status: status(),
      kind: 'wait',
    },
    {
      name: 'nothing spent yet and nothing running: one episode starts',
      cap: cap({ maxCostUSD: 0.05 }),
      status: status(),
      declared: 1,
      kind: 'go',
    },
    {
      name: 'a cheap member is judged at the family’s average: the family stops as one',
      // The parent's own episodes cost $0.01, its children's $0.10: the parent's next is taken at $0.07.
      cap: cap({ own: true, othersUSD: 0.2, finished: { costUSD: 0.2, episodes: 2 } }),
      status: status({ episodes: 1, costUSD: 0.01 }),
      kind: 'stop',
      message:
        /^maxCostUSD 0\.25: \$0\.21 spent by the task \(\$0\.01\) and its children and the next episode is expected to cost \$0\.07$/,
    },
    {
      name: 'the declared estimate before a history of its own',
      cap: cap({ othersUSD: 0.1, finished: { costUSD: 0.1, episodes: 1 } }),
      status: status(),
      declared: 0.2,
      kind: 'stop',
      message: /expected to cost \$0\.20$/,
    },
  ];
  for (const row of table)
    it(row.name, () => {
      const v = judgeFamilyCap(row.cap, row.status, row.declared);
      assert.equal(v.kind, row.kind, JSON.stringify(v));
      if (row.message) assert.match(v.kind === 'go' ? '' : v.message, row.message);
    });

  it('several caps: a stop wins over a wait, a wait over a go', () => {
    const fits = cap({ task: 'gp', maxCostUSD: 10 });
    const holds = cap({
      othersUSD: 0.11,
      running: [{ task: 'p-b', status: ranOnce(0.1) }],
      finished: { costUSD: 0.11, episodes: 2 },
    });
    const stops = cap({ othersUSD: 0.25 });
    const s = status();
    assert.equal(judgeFamilyCaps([fits], s).kind, 'go');
    assert.equal(judgeFamilyCaps([fits, holds], s).kind, 'wait');
    assert.equal(judgeFamilyCaps([holds, stops, fits], s).kind, 'stop');
  });
});

describe('a grandparent’s own cap counts its grandchildren', () => {
  const own = { gp: 0.01, c: 0.01, g: 2 };
  const kids = { gp: ['c'], c: ['g'] };
  const family = (maxCostUSD: number) =>
    cap({
      task: 'gp',
      own: true,
      maxCostUSD,
      othersUSD: cost('c', own, kids),
      finished: { costUSD: 2.01, episodes: 2 },
    });

  it('the grandparent counts its grandchild through its child', () => {
    const v = judgeFamilyCap(family(1), status({ episodes: 1, costUSD: own.gp }));
    assert.deepEqual(v, {
      kind: 'stop',
      message: 'maxCostUSD 1 reached: $2.02 spent by the task ($0.01) and its children',
    });
  });

  it('under the cap: no hold', () => {
    assert.equal(judgeFamilyCap(family(5), status({ episodes: 1, costUSD: own.gp })).kind, 'go');
  });
});
