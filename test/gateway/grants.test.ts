// The gateway's grants as shared caps see them: every episode whose leash shares a cap (a family's, an
// AgentBudget's) is kept under that cap, ended ones too, so each request of one episode is judged with what the
// others were metered at since its snapshot.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EpisodeLeash } from '../../controller/api/episode-leash.ts';
import { Grants } from '../../controller/gateway/grants.ts';
import type { GrantSpec } from '../../controller/gateway/grants.ts';

let n = 0;
const random = (size: number) => Buffer.alloc(size, ++n);
const leash = (counted: Record<string, number>): EpisodeLeash => ({
  task: { costUSD: 0, tokens: 0 },
  others: [
    { what: 'AgentBudget team', usd: 1, shared: { key: 'budget team', counted } },
    { what: 'maxCostUSD 5 of p (its family’s cap)', usd: 5 },
  ],
});
const spec = (task: string, episode: number, l: EpisodeLeash, namespace = 'default'): GrantSpec => ({
  namespace,
  task,
  episode,
  provider: 'anthropic',
  upstream: 'http://127.0.0.1:1',
  credentials: [{ name: 'main', value: 'k' }],
  pricing: {},
  leash: l,
});

describe('Grants: the spend of a shared cap’s other episodes', () => {
  it("an AgentBudget: the other tasks' episodes after what the snapshot counted, ended ones included", () => {
    const grants = new Grants(random);
    const a1 = grants.issue(spec('a', 1, leash({})));
    const b1 = grants.issue(spec('b', 1, leash({ a: 0 })));
    const other = grants.issue(spec('c', 1, leash({}), 'elsewhere'));
    const metered = (t: string, usd: number, tokens = 0) => {
      const g = grants.get(t);
      assert.ok(g);
      g.metered.costUSD = usd;
      g.metered.tokens = { input: tokens, output: 0, cacheRead: 0, cacheWrite: 0 };
    };
    metered(a1, 0.3, 30);
    metered(b1, 0.2, 20);
    metered(other, 9);
    const b = grants.get(b1);
    assert.ok(b);
    assert.deepEqual(grants.sharedSpendOf(b), [{ costUSD: 0.3, tokens: 30 }, undefined]);
    // a's episode 1 ends: its token dies, and what it spent still counts for b's snapshot.
    grants.revoke(a1);
    assert.equal(grants.get(a1), undefined);
    assert.deepEqual(grants.sharedSpendOf(b), [{ costUSD: 0.3, tokens: 30 }, undefined]);
    // a's episode 2 starts after its episode 1 is in the ledger: it counts b's episode 1 only.
    const a2 = grants.issue(spec('a', 2, leash({ b: 0 })));
    const a = grants.get(a2);
    assert.ok(a);
    assert.deepEqual(grants.sharedSpendOf(a), [{ costUSD: 0.2, tokens: 20 }, undefined]);
    // A snapshot that counted b's episode 1 does not count it again.
    const a3 = grants.get(grants.issue(spec('a', 3, leash({ b: 1 }))));
    assert.ok(a3);
    assert.deepEqual(grants.sharedSpendOf(a3), [{ costUSD: 0, tokens: 0 }, undefined]);
  });
});

describe('Grants: what a task’s newest episode was metered at (the budgets’ liveSpend)', () => {
  it('running, and still after it ended until a newer episode of the task is granted; by namespace and task', () => {
    const grants = new Grants(random);
    const a1 = grants.issue(spec('a', 1, leash({})));
    grants.issue(spec('a', 1, leash({}), 'elsewhere'));
    const g = grants.get(a1);
    assert.ok(g);
    g.metered.costUSD = 0.45;
    g.metered.tokens = { input: 90, output: 9, cacheRead: 0, cacheWrite: 0 };
    const live = { task: 'a', episode: 1, costUSD: 0.45, tokens: 99 };
    assert.deepEqual(grants.liveSpend('default', 'a'), live);
    // The agent exited: its token dies, but the pass that records the episode may come after another task's check.
    grants.revoke(a1);
    assert.deepEqual(grants.liveSpend('default', 'a'), live);
    assert.equal(grants.liveSpend('elsewhere', 'a')?.costUSD, 0);
    assert.equal(grants.liveSpend('default', 'b'), undefined);
    grants.issue(spec('a', 2, leash({})));
    assert.deepEqual(grants.liveSpend('default', 'a'), { task: 'a', episode: 2, costUSD: 0, tokens: 0 });
  });
});
