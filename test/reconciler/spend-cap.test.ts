import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import type { BudgetFacts } from '../../controller/reconciler/budget.ts';
import type { FamilyCap } from '../../controller/reconciler/family-cap.ts';
import {
  episodeLeash,
  episodesCounted,
  freedBy,
  judgeRequest,
  sharedSpend,
  spendCapReached,
} from '../../controller/reconciler/spend-cap.ts';

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
    assert.deepEqual(leash.others, [
      { what: 'AgentBudget team', usd: 2, tokens: undefined, shared: { key: 'budget team', counted: {} } },
    ]);
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
    assert.match(v.kind === 'refuse' ? v.message : '', /spent \$1\.0000 \(with what its other episodes spent since\)/);
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

describe('an AgentBudget window at the wire: shared by its tasks, and room given back as its slots leave it', () => {
  const t0 = Date.parse('2026-06-01T12:00:00Z');
  const at = (ms: number) => new Date(t0 + ms);
  // A 1h window holding $0.60 ($0.40 leaves at +10 min, $0.20 at +30 min) of $1: $0.40 left at the start.
  const rolling = budget({
    window: '1h',
    limitUSD: 1,
    maxTokens: 1000,
    spend: [
      { expiresAtMs: t0 + 1_800_000, usd: 0.2, tokens: 100, episodes: 0 },
      { expiresAtMs: t0 + 600_000, usd: 0.4, tokens: 300, episodes: 0 },
    ],
    counted: { costUSD: 0, tokens: 0, episodes: 0 },
    countedThrough: { other: 3 },
  });
  const leash = episodeLeash(status(0), {}, [rolling]);
  const entry = leash.others[0];

  it('the leash marks the budget shared, with what its ledger counted of each other task', () =>
    assert.deepEqual(entry?.shared, { key: 'budget team', counted: { other: 3 } }));
  it('and carries the slots that leave the window, earliest first', () =>
    assert.deepEqual(entry?.frees, [
      { atMs: t0 + 600_000, usd: 0.4, tokens: 300 },
      { atMs: t0 + 1_800_000, usd: 0.2, tokens: 100 },
    ]));
  it("the task's spend the ledger has not counted enters the window now, and leaves it a window later", () => {
    const l = episodeLeash(status(0.25), {}, [rolling], [], at(0));
    assert.equal(l.others[0]?.usd, 0.15);
    assert.deepEqual(l.others[0]?.frees?.at(-1), { atMs: t0 + 3_600_000, usd: 0.25, tokens: 0 });
  });
  it('a total budget frees nothing', () =>
    assert.equal(episodeLeash(status(0), {}, [budget()]).others[0]?.frees, undefined));

  const rows: Array<[string, { usd: number; tokens?: number }, { usd: number; tokens?: number }, number, string]> = [
    ['its own spend under what was left', { usd: 0.39 }, { usd: 0 }, 0, 'go'],
    ['its own spend reaches what was left', { usd: 0.4 }, { usd: 0 }, 0, 'refuse'],
    ['another task of the budget spent the rest since', { usd: 0.1 }, { usd: 0.3 }, 0, 'refuse'],
    ['together under it', { usd: 0.1 }, { usd: 0.29 }, 0, 'go'],
    ['a slot left the window: its room is back', { usd: 0.7 }, { usd: 0 }, 600_000, 'go'],
    ['a slot left the window, and the rest is spent', { usd: 0.5 }, { usd: 0.3 }, 600_000, 'refuse'],
    ['a minute before the slot leaves: still refused', { usd: 0.4 }, { usd: 0 }, 540_000, 'refuse'],
    ['both slots left: all of the limit', { usd: 0.99 }, { usd: 0 }, 1_800_000, 'go'],
    ["tokens: the window's 400 of 1000 used, 600 left", { usd: 0, tokens: 599 }, { usd: 0 }, 0, 'go'],
    ['tokens: shared with the other task', { usd: 0, tokens: 300 }, { usd: 0, tokens: 300 }, 0, 'refuse'],
    ['tokens: 300 back once the slot left', { usd: 0, tokens: 899 }, { usd: 0 }, 600_000, 'go'],
  ];
  for (const [name, own, others, ms, want] of rows)
    it(name, () => {
      const v = judgeRequest(
        leash,
        { costUSD: own.usd, tokens: own.tokens ?? 0 },
        [{ costUSD: others.usd, tokens: others.tokens ?? 0 }],
        at(ms),
      );
      assert.equal(v.kind, want, v.kind === 'refuse' ? v.message : '');
    });

  it('the refusal names the AgentBudget, what was left, what came back and that others spent too', () => {
    const v = judgeRequest(leash, { costUSD: 0.5, tokens: 0 }, [{ costUSD: 0.3, tokens: 0 }], at(600_000));
    assert.equal(
      v.kind === 'refuse' ? v.message : '',
      'episodic: budget exhausted: AgentBudget team: $0.4000 was left when the episode started (+ $0.4000 that has left its window since) and it spent $0.8000 (with what its other episodes spent since)',
    );
  });
  it('without a clock nothing is given back', () =>
    assert.equal(judgeRequest(leash, { costUSD: 0.7, tokens: 0 }).kind, 'refuse'));
});

describe('freedBy and episodesCounted', () => {
  const frees = [
    { atMs: 1000, usd: 0.1, tokens: 1 },
    { atMs: 2000, usd: 0.2, tokens: 2 },
  ];
  const rows: Array<[string, Date | undefined, { usd: number; tokens: number }]> = [
    ['before any', new Date(999), { usd: 0, tokens: 0 }],
    ['at the first', new Date(1000), { usd: 0.1, tokens: 1 }],
    ['after both, rounded as money is', new Date(5000), { usd: 0.3, tokens: 3 }],
    ['no clock', undefined, { usd: 0, tokens: 0 }],
  ];
  for (const [name, now, want] of rows) it(`freedBy: ${name}`, () => assert.deepEqual(freedBy(frees, now), want));
  it('episodesCounted: a running episode is not counted yet', () =>
    assert.equal(episodesCounted({ ...status(0), episodes: 3, currentEpisode: { number: 3, startedAt: '' } }), 2));
  it('episodesCounted: no episode running: all of them', () =>
    assert.equal(episodesCounted({ ...status(0), episodes: 3 }), 3));
});
