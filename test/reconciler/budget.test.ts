// AgentBudget rules inside reconcile(): windows rolling over, the predictive stop, the hourly rate, total vs
// windowed, and the ledger that carries window spend, all on an injected clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import type { BudgetLedger, BudgetWindow } from '../../controller/api/agent-budget.ts';
import { matchesSelector } from '../../controller/api/agent-budget.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import { expectedEpisode, RUNNING_RECHECK_MS } from '../../controller/reconciler/budget.ts';
import type { BudgetFacts } from '../../controller/reconciler/budget.ts';
import { addSpend, prune, windowEntries } from '../../controller/reconciler/budget-ledger.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';

const T0 = new Date('2026-11-23T12:00:00.000Z');
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const EMPTY: BudgetLedger = { buckets: [], starts: [], tasks: [] };

/** A ledger with `usd` spent (and one episode started) at each given minute. */
function ledgerOf(window: BudgetWindow, entries: Array<[minute: number, usd: number]>): BudgetLedger {
  return entries.reduce((l, [m, usd]) => addSpend(l, window, { usd, tokens: 0, episodes: 1 }, at(m)), EMPTY);
}

function budget(
  window: BudgetWindow,
  limitUSD: number,
  ledger: BudgetLedger,
  now: Date,
  extra: Partial<BudgetFacts> = {},
): BudgetFacts {
  return {
    name: 'team',
    window,
    limitUSD,
    ...windowEntries(prune(ledger, window, now), window),
    counted: { costUSD: 0, tokens: 0, episodes: 0 },
    ...extra,
  };
}

/** A task that ran `episodes` episodes for `cost` in all, asking to start the next one. */
function idle(now: Date, budgets: BudgetFacts[], status: Partial<AgentTaskStatus> = {}): ReconcileInput {
  const s = { ...emptyStatus(), observedGeneration: 1, phase: 'Pending' as const, episodes: 2, costUSD: 2, ...status };
  for (const b of budgets) b.counted = { costUSD: s.costUSD, tokens: 0, episodes: s.episodes };
  return {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['a'] } }),
    status: s,
    dependencies: {},
    freeSlots: 1,
    budgets,
    now,
    jitter: 0.5,
  };
}

/** A task that has not run yet. */
const NEW_TASK: Partial<AgentTaskStatus> = { episodes: 0, costUSD: 0 };
/** The budget's other task: one episode, $0.90. */
const OTHER_AT_90 = { costUSD: 0.9, tokens: 0, episodes: 1 };

const cases: Array<{
  name: string;
  in: () => ReconcileInput;
  phase: string;
  reason?: string;
  next?: string;
  message?: RegExp;
  held?: string[];
}> = [
  {
    name: 'room in the window: the episode starts',
    in: () => idle(at(0), [budget('5h', 5, ledgerOf('5h', [[-60, 1]]), at(0))]),
    phase: 'Running',
  },
  {
    name: 'predictive: $4 spent + an average of $1 would not cross $5, starts',
    in: () => idle(at(0), [budget('5h', 5, ledgerOf('5h', [[-60, 4]]), at(0))]),
    phase: 'Running',
  },
  {
    name: 'predictive: $4.50 spent + an average of $1 would cross $5: waits until the oldest spend leaves the window',
    in: () =>
      idle(at(0), [
        budget(
          '5h',
          5,
          ledgerOf('5h', [
            [-240, 3],
            [-30, 1.5],
          ]),
          at(0),
        ),
      ]),
    phase: 'Waiting',
    reason: 'BudgetWindow',
    next: at(60).toISOString(),
    message:
      /AgentBudget team: spent \$4\.50 of \$5\.00 and the next episode is expected to cost \$1\.00 in the 5h window; capacity returns at 2026-11-23T13:00/,
    held: ['team'],
  },
  {
    name: 'the window rolled over: the spend of 5 h ago no longer counts',
    in: () => idle(at(301), [budget('5h', 5, ledgerOf('5h', [[0, 5]]), at(301))]),
    phase: 'Running',
  },
  {
    name: 'a window that frees only after several slots leave waits for enough of them',
    in: () =>
      idle(at(0), [
        budget(
          '1h',
          2.5,
          ledgerOf('1h', [
            [-50, 1],
            [-40, 1],
            [-10, 1],
          ]),
          at(0),
        ),
      ]),
    phase: 'Waiting',
    reason: 'BudgetWindow',
    next: at(20).toISOString(),
  },
  {
    name: 'a total budget spent stops the task for review',
    in: () => idle(at(0), [budget('total', 5, ledgerOf('total', [[-9000, 5]]), at(0))]),
    phase: 'NeedsReview',
    reason: 'BudgetExceeded',
    message: /AgentBudget team: spent \$5\.00 of \$5\.00 \(total\)/,
    held: ['team'],
  },
  {
    name: 'a total budget stops predictively too',
    in: () => idle(at(0), [budget('total', 5, ledgerOf('total', [[-10, 4.5]]), at(0))]),
    phase: 'NeedsReview',
    reason: 'BudgetExceeded',
  },
  {
    name: 'an empty window admits one episode even if the average is over the limit',
    in: () => idle(at(0), [budget('1h', 0.5, EMPTY, at(0))]),
    phase: 'Running',
  },
  {
    name: 'rate limit: 3 starts in the last hour with maxEpisodesPerHour 3 waits for the oldest to leave',
    in: () =>
      idle(at(0), [
        budget(
          '24h',
          100,
          ledgerOf('24h', [
            [-50, 0.1],
            [-20, 0.1],
            [-5, 0.1],
          ]),
          at(0),
          { maxEpisodesPerHour: 3 },
        ),
      ]),
    phase: 'Waiting',
    reason: 'RateLimited',
    next: at(10).toISOString(),
    message: /3 episodes started in the last hour \(maxEpisodesPerHour 3\)/,
  },
  {
    name: 'rate limit: a start more than an hour ago no longer counts',
    in: () =>
      idle(at(0), [
        budget(
          '24h',
          100,
          ledgerOf('24h', [
            [-61, 0.1],
            [-20, 0.1],
            [-5, 0.1],
          ]),
          at(0),
          { maxEpisodesPerHour: 3 },
        ),
      ]),
    phase: 'Running',
  },
  {
    name: 'tokens: maxTokens reached in the window waits',
    in: () =>
      idle(at(0), [
        budget('1h', 100, addSpend(EMPTY, '1h', { usd: 0, tokens: 1000, episodes: 1 }, at(-30)), at(0), {
          maxTokens: 1000,
        }),
      ]),
    phase: 'Waiting',
    reason: 'BudgetWindow',
    next: at(30).toISOString(),
  },
  {
    name: 'a total budget spent and a window wait: the stop wins',
    in: () =>
      idle(at(0), [
        budget('total', 5, ledgerOf('total', [[-10, 5]]), at(0)),
        { ...budget('1h', 1, ledgerOf('1h', [[-10, 1]]), at(0)), name: 'hourly' },
      ]),
    phase: 'NeedsReview',
    reason: 'BudgetExceeded',
    held: ['team'],
  },
  {
    name: 'two windows hold: wait for the later one, reason BudgetWindow over RateLimited',
    in: () =>
      idle(at(0), [
        budget('1h', 1, ledgerOf('1h', [[-40, 1]]), at(0)),
        { ...budget('24h', 100, ledgerOf('24h', [[-50, 0.1]]), at(0), { maxEpisodesPerHour: 1 }), name: 'rate' },
      ]),
    phase: 'Waiting',
    reason: 'BudgetWindow',
    next: at(20).toISOString(),
    held: ['team', 'rate'],
  },
  {
    name: 'a budget hold is decided afresh: capacity back before nextEpisodeAt starts at once',
    in: () =>
      idle(at(0), [budget('5h', 50, EMPTY, at(0))], {
        phase: 'Waiting',
        reason: 'BudgetWindow',
        nextEpisodeAt: at(60).toISOString(),
      }),
    phase: 'Running',
  },
  {
    name: "a task with no history is expected to cost what the budget's other tasks averaged: $0.90 + $0.90 > $1",
    in: () =>
      idle(at(0), [budget('total', 1, ledgerOf('total', [[-10, 0.9]]), at(0), { others: OTHER_AT_90 })], NEW_TASK),
    phase: 'NeedsReview',
    reason: 'BudgetExceeded',
    message:
      /spent \$0\.90 of \$1\.00 and the next episode is expected to cost \$0\.90 \(the average episode of the budget's other tasks\) \(total\)/,
  },
  {
    name: "the other tasks' average fits: a new task starts",
    in: () =>
      idle(
        at(0),
        [
          budget('total', 1, ledgerOf('total', [[-10, 0.3]]), at(0), {
            others: { costUSD: 0.3, tokens: 0, episodes: 3 },
          }),
        ],
        NEW_TASK,
      ),
    phase: 'Running',
  },
  {
    name: "limits.expectedEpisodeCostUSD is a new task's estimate before the other tasks' average",
    in: () =>
      idle(
        at(0),
        [
          budget('total', 1, ledgerOf('total', [[-10, 0.5]]), at(0), {
            others: { costUSD: 0.5, tokens: 0, episodes: 5 },
            declaredUSD: 0.6,
          }),
        ],
        NEW_TASK,
      ),
    phase: 'NeedsReview',
    reason: 'BudgetExceeded',
    message: /expected to cost \$0\.60 \(its limits\.expectedEpisodeCostUSD\)/,
  },
  {
    name: 'an episode running counts at its expected cost: $0.50 + $0.30 running + $0.30 waits for it to end',
    in: () =>
      idle(
        at(0),
        [budget('total', 1, ledgerOf('total', [[-10, 0.5]]), at(0), { running: [{ task: 'a', usd: 0.3, tokens: 0 }] })],
        { episodes: 2, costUSD: 0.6 },
      ),
    phase: 'Waiting',
    reason: 'BudgetWindow',
    next: at(RUNNING_RECHECK_MS / 60_000).toISOString(),
    message:
      /spent \$0\.50 \(\+ \$0\.30 expected of 1 episode running\) of \$1\.00 and the next episode is expected to cost \$0\.30; waiting for them to end/,
    held: ['team'],
  },
  {
    name: 'over the limit even without the running episodes: a total budget stops at once',
    in: () =>
      idle(
        at(0),
        [budget('total', 1, ledgerOf('total', [[-10, 0.8]]), at(0), { running: [{ task: 'a', usd: 0.3, tokens: 0 }] })],
        { episodes: 2, costUSD: 0.6 },
      ),
    phase: 'NeedsReview',
    reason: 'BudgetExceeded',
  },
  {
    name: 'nothing known of any episode cost and one running: the empty window admitted that one, the next waits',
    in: () =>
      idle(at(0), [budget('total', 1, EMPTY, at(0), { running: [{ task: 'a', usd: 0, tokens: 0 }] })], NEW_TASK),
    phase: 'Waiting',
    reason: 'BudgetWindow',
    message: /1 episode\(s\) of its tasks running and no episode cost known yet; waiting for them to end/,
  },
  {
    name: 'a backoff is not cut short by a budget with room',
    in: () =>
      idle(at(0), [budget('5h', 50, EMPTY, at(0))], {
        phase: 'Waiting',
        reason: 'Backoff',
        nextEpisodeAt: at(1).toISOString(),
      }),
    phase: 'Waiting',
    reason: 'Backoff',
  },
];

for (const c of cases) {
  test(`budget: ${c.name}`, () => {
    const out = reconcile(c.in());
    assert.equal(out.status.phase, c.phase, out.status.message);
    if (c.reason) assert.equal(out.status.reason, c.reason);
    if (c.next) {
      assert.equal(out.status.nextEpisodeAt, c.next);
      assert.equal(out.requeueAfterMs, Date.parse(c.next) - c.in().now.getTime());
    }
    if (c.message) assert.match(out.status.message ?? '', c.message);
    if (c.held) assert.deepEqual(out.heldByBudgets, c.held);
    if (c.phase === 'Running') assert.equal(out.heldByBudgets, undefined);
  });
}

test('budget: the episode that just ended counts before the next one starts (spend not yet in the ledger)', () => {
  const b = budget('1h', 1, EMPTY, at(0));
  b.counted = { costUSD: 0, tokens: 0, episodes: 1 };
  const input: ReconcileInput = {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['a'] } }),
    status: {
      ...emptyStatus(),
      observedGeneration: 1,
      phase: 'Running',
      episodes: 1,
      currentEpisode: { number: 1, startedAt: at(-1).toISOString() },
    },
    episode: { number: 1, state: 'finished', result: episodeResult({ exitCode: 0, costUSD: 0.6 }) },
    dependencies: {},
    freeSlots: 1,
    budgets: [b],
    now: at(0),
    jitter: 0.5,
  };
  const out = reconcile(input);
  assert.equal(out.status.lastEpisode?.costUSD, 0.6);
  assert.equal(out.status.reason, 'BudgetWindow', out.status.message);
  assert.equal(out.status.nextEpisodeAt, at(60).toISOString());
});

test('ledger: bounded slots, expired ones dropped, total keeps one slot', () => {
  let l = EMPTY;
  for (let m = 0; m < 7 * 24 * 60 * 2; m += 7) l = addSpend(l, '7d', { usd: 0.01, tokens: 1, episodes: 1 }, at(m));
  assert.ok(l.buckets.length <= 7 * 24 + 1, `${l.buckets.length} slots`);
  assert.ok(l.starts.length <= 61, `${l.starts.length} start slots`);
  let total = EMPTY;
  for (let m = 0; m < 1000; m += 10) total = addSpend(total, 'total', { usd: 1, tokens: 0, episodes: 1 }, at(m));
  assert.equal(total.buckets.length, 1);
  assert.equal(total.buckets[0].usd, 100);
});

test('selector: matchLabels and every operator', () => {
  const labels = { team: 'a', tier: 'gold' };
  assert.ok(matchesSelector({}, labels));
  assert.ok(matchesSelector({ matchLabels: { team: 'a' } }, labels));
  assert.ok(!matchesSelector({ matchLabels: { team: 'b' } }, labels));
  assert.ok(
    matchesSelector({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold', 'silver'] }] }, labels),
  );
  assert.ok(!matchesSelector({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['gold'] }] }, labels));
  assert.ok(matchesSelector({ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, labels));
  assert.ok(!matchesSelector({ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, labels));
  assert.ok(matchesSelector({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['y'] }] }, undefined));
});

test("budget: a task's expected episode: its own average over finished episodes, else declared, else the others'", () => {
  const status = (s: Partial<AgentTaskStatus>): AgentTaskStatus => ({ ...emptyStatus(), ...s });
  const others = { costUSD: 1, tokens: 400, episodes: 4 };
  assert.deepEqual(expectedEpisode(status({ episodes: 2, costUSD: 1 }), { others }), {
    usd: 0.5,
    tokens: 0,
    source: 'own',
  });
  // The episode running now has no cost yet: the average is over the finished one.
  const running = status({ episodes: 2, costUSD: 0.4, currentEpisode: { number: 2, startedAt: T0.toISOString() } });
  assert.equal(expectedEpisode(running, { others }).usd, 0.4);
  assert.deepEqual(expectedEpisode(status({}), { others, declaredUSD: 2 }), {
    usd: 2,
    tokens: 100,
    source: 'declared',
  });
  assert.deepEqual(expectedEpisode(status({}), { others }), { usd: 0.25, tokens: 100, source: 'others' });
  assert.deepEqual(expectedEpisode(status({}), {}), { usd: 0, tokens: 0, source: 'none' });
});
