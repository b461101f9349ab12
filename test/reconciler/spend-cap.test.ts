import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import type { BudgetFacts } from '../../controller/reconciler/budget.ts';
import type { FamilyCap } from '../../controller/reconciler/family-cap.ts';
import { episodeLeash, judgeRequest, sharedSpend, spendCapReached } from '../../controller/reconciler/spend-cap.ts';

const status = (costUSD: number, input = 0, output = 0) => ({
  ...emptyStatus(),
  costUSD,
  tokens: { input, output, cacheRead: 0, cacheWrite: 0 },
});

const budget = (over: Partial<BudgetFacts> = {}): BudgetFacts => ({
  name: 'team',
  window: 'total',
  limitUSD: 10,
  spend: [{ usd: 7, tokens: 500, episodes: 2 }],
  starts: [],
  counted: { costUSD: 0.5, tokens: 0, episodes: 1 },
  ...over,
});

const cap = (over: Partial<FamilyCap> = {}): FamilyCap => ({
  task: 'parent',
  own: false,
  maxCostUSD: 3,
  othersUSD: 1,
  running: [],
  finished: { costUSD: 1, episodes: 1 },
  ...over,
});

describe('spendCapReached: the task cap, before an episode and at the gateway', () => {
  const rows: Array<[string, { costUSD: number; tokens: number }, object, RegExp | undefined]> = [
    ['no limits', { costUSD: 100, tokens: 1e9 }, {}, undefined],
    ['under maxCostUSD', { costUSD: 0.99, tokens: 0 }, { maxCostUSD: 1 }, undefined],
    ['at maxCostUSD', { costUSD: 1, tokens: 0 }, { maxCostUSD: 1 }, /spent \$1\.0000 of maxCostUSD \$1/],
    ['at maxTokens', { costUSD: 0, tokens: 10 }, { maxTokens: 10 }, /used 10 of maxTokens 10/],
  ];
  for (const [name, spent, limits, want] of rows)
    it(name, () => {
      const got = spendCapReached(spent, limits);
      if (want) assert.match(got ?? '', want);
      else assert.equal(got, undefined);
    });
});

describe('judgeRequest: a request goes while the leash has room', () => {
  it('the task cap counts the spend before the episode plus what the gateway metered', () => {
    const leash = episodeLeash(status(0.6), { maxCostUSD: 1 });
    assert.deepEqual(judgeRequest(leash, { costUSD: 0.35, tokens: 0 }), { kind: 'go' });
    const refused = judgeRequest(leash, { costUSD: 0.4, tokens: 0 });
    assert.equal(refused.kind, 'refuse');
    assert.match(refused.kind === 'refuse' ? refused.message : '', /maxCostUSD \$1 \(the task's limits\)/);
  });

  it('maxTokens counts input + output', () => {
    const leash = episodeLeash(status(0, 60, 20), { maxTokens: 100 });
    assert.equal(judgeRequest(leash, { costUSD: 0, tokens: 19 }).kind, 'go');
    assert.equal(judgeRequest(leash, { costUSD: 0, tokens: 20 }).kind, 'refuse');
  });

  it("an AgentBudget: what its window held at the start, and the task's spend it had not counted", () => {
    // 10 - 7 in the window - (1.5 - 0.5) not yet counted = $2 left.
    const leash = episodeLeash(status(1.5), {}, [budget()]);
    assert.deepEqual(leash.others, [{ what: 'AgentBudget team', usd: 2, tokens: undefined }]);
    assert.equal(judgeRequest(leash, { costUSD: 1.99, tokens: 0 }).kind, 'go');
    const v = judgeRequest(leash, { costUSD: 2, tokens: 0 });
    assert.match(v.kind === 'refuse' ? v.message : '', /AgentBudget team: \$2\.0000 was left/);
  });

  it("an AgentBudget's maxTokens", () => {
    const leash = episodeLeash(status(0), {}, [
      budget({ maxTokens: 600, counted: { costUSD: 0, tokens: 0, episodes: 0 } }),
    ]);
    assert.equal(judgeRequest(leash, { costUSD: 0, tokens: 99 }).kind, 'go');
    assert.equal(judgeRequest(leash, { costUSD: 0, tokens: 100 }).kind, 'refuse');
  });

  it("a family cap: the family's others' spend and the task's own", () => {
    const leash = episodeLeash(status(0.5), {}, [], [cap()]);
    assert.equal(leash.others[0]?.usd, 1.5);
    assert.equal(judgeRequest(leash, { costUSD: 1.4, tokens: 0 }).kind, 'go');
    const v = judgeRequest(leash, { costUSD: 1.5, tokens: 0 });
    assert.match(v.kind === 'refuse' ? v.message : '', /maxCostUSD 3 of parent \(its family's cap\)/);
  });

  it('nothing left at the start: the first request is refused', () => {
    const leash = episodeLeash(status(3), {}, [], [cap({ othersUSD: 0 })]);
    assert.equal(judgeRequest(leash, { costUSD: 0, tokens: 0 }).kind, 'refuse');
  });
});

describe('sharedSpend: what a shared cap’s other episodes spent since the snapshot', () => {
  const shared = { key: 'family parent', counted: { parent: 2, a: 1 } };
  const live = (task: string, episode: number, costUSD: number, tokens = 0) => ({ task, episode, costUSD, tokens });
  const rows: Array<[string, Parameters<typeof sharedSpend>[2], { costUSD: number; tokens: number }]> = [
    ['nothing live', [], { costUSD: 0, tokens: 0 }],
    ['the episode itself is not counted twice', [live('b', 1, 0.5, 10)], { costUSD: 0, tokens: 0 }],
    ['an episode already in the snapshot', [live('a', 1, 0.3, 5)], { costUSD: 0, tokens: 0 }],
    ['a later episode of a counted member', [live('a', 2, 0.3, 5)], { costUSD: 0.3, tokens: 5 }],
    ['a member the snapshot did not know', [live('c', 1, 0.25, 7)], { costUSD: 0.25, tokens: 7 }],
    [
      'several, rounded as money is',
      [live('a', 2, 0.1), live('c', 1, 0.2), live('parent', 3, 4e-11)],
      { costUSD: 0.3, tokens: 0 },
    ],
  ];
  for (const [name, l, want] of rows) it(name, () => assert.deepEqual(sharedSpend(shared, 'b', l), want));
  it('a cap that is not shared adds nothing', () =>
    assert.deepEqual(sharedSpend(undefined, 'b', [live('a', 9, 1)]), { costUSD: 0, tokens: 0 }));
});

describe('judgeRequest with a shared cap', () => {
  const leash = {
    task: { costUSD: 0, tokens: 0, maxCostUSD: 1 },
    others: [{ what: 'maxCostUSD 1 of p (its family’s cap)', usd: 1, shared: { key: 'family p', counted: {} } }],
  };
  it('goes while the family’s live spend leaves room', () =>
    assert.equal(judgeRequest(leash, { costUSD: 0.3, tokens: 0 }, [{ costUSD: 0.6, tokens: 0 }]).kind, 'go'));
  it('refuses once this episode and its siblings together spent what was left, and says so', () => {
    const v = judgeRequest(leash, { costUSD: 0.4, tokens: 0 }, [{ costUSD: 0.6, tokens: 0 }]);
    assert.equal(v.kind, 'refuse');
    assert.match(v.kind === 'refuse' ? v.message : '', /spent \$1\.0000 \(with what its other members spent since\)/);
  });
  it('the episode’s own spend alone is judged as before', () =>
    assert.equal(judgeRequest(leash, { costUSD: 0.4, tokens: 0 }).kind, 'go'));
});

describe('episodeLeash marks a family cap as shared', () => {
  it('with the members’ counted episodes', () => {
    const l = episodeLeash(status(0), {}, [], [cap({ countedThrough: { parent: 1, a: 0 } })]);
    assert.deepEqual(l.others[0]?.shared, { key: 'family parent', counted: { parent: 1, a: 0 } });
  });
});
