// The circuit breaker's every transition, and the promise that slow but real work never trips it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BreakerSpecSchema } from '../../controller/api/leash.ts';
import type { BreakerStatus, Evidence } from '../../controller/api/leash.ts';
import type { Outcome } from '../../controller/api/agent-task.ts';
import { CLOSED, madeProgress, reopenBreaker, stepBreaker } from '../../controller/reconciler/breaker.ts';

const SPEC = BreakerSpecSchema.parse({});
const AT = '2026-11-23T10:00:00.000Z';
const still: Evidence = { workspace: { kind: 'git', changed: false, headBefore: 'abc', headAfter: 'abc' } };
const moved: Evidence = { workspace: { kind: 'git', changed: true, headBefore: 'abc', headAfter: 'def' } };

/** Runs episodes through the breaker; returns each state. */
function run(
  episodes: Array<{ outcome?: Outcome; evidence?: Evidence }>,
  spec = SPEC,
  start: BreakerStatus = CLOSED,
): BreakerStatus[] {
  let b = start;
  return episodes.map(
    (e) => (b = stepBreaker(b, spec, { outcome: e.outcome ?? 'continue', evidence: e.evidence, at: AT }).breaker),
  );
}
const times = <T>(n: number, x: T): T[] => Array.from({ length: n }, () => x);

test('breaker: progress is a changed workspace, an advanced checklist or success; no evidence is no verdict', () => {
  assert.equal(madeProgress('continue', moved, undefined), true);
  assert.equal(madeProgress('continue', still, undefined), false);
  assert.equal(madeProgress('succeeded', still, undefined), true);
  assert.equal(madeProgress('continue', undefined, undefined), undefined);
  const list = (done: number) => ({ done, total: 5, inProgress: 0, failed: 0, skipped: 0 });
  assert.equal(madeProgress('continue', { checklist: list(3) }, list(2)), true);
  assert.equal(madeProgress('continue', { checklist: list(2) }, list(2)), false);
});

const cases: Array<{
  name: string;
  episodes: Array<{ outcome?: Outcome; evidence?: Evidence }>;
  spec?: Partial<typeof SPEC>;
  states: string;
}> = [
  { name: '4 episodes without progress stay Closed', episodes: times(4, { evidence: still }), states: 'CCCC' },
  { name: 'the 5th without progress goes HalfOpen', episodes: times(5, { evidence: still }), states: 'CCCCH' },
  { name: '3 more in HalfOpen open it', episodes: times(8, { evidence: still }), states: 'CCCCHHHO' },
  {
    name: 'progress in HalfOpen closes it',
    episodes: [...times(5, { evidence: still }), { evidence: moved }, { evidence: still }],
    states: 'CCCCHCC',
  },
  { name: 'episodes without evidence count for nothing', episodes: times(20, {}), states: 'C'.repeat(20) },
  {
    name: 'outages and stops count for nothing',
    episodes: [
      ...times(4, { evidence: still }),
      ...(['transient', 'usageLimit', 'cancelled', 'interrupted'] as Outcome[]).map((outcome) => ({
        outcome,
        evidence: still,
      })),
      { evidence: still },
    ],
    states: 'CCCCCCCCH',
  },
  {
    name: 'noProgressEpisodes 0 turns the rule off',
    episodes: times(12, { evidence: still }),
    spec: { noProgressEpisodes: 0 },
    states: 'C'.repeat(12),
  },
  {
    name: 'halfOpenEpisodes 0 opens at the first stall',
    episodes: times(5, { evidence: still }),
    spec: { halfOpenEpisodes: 0 },
    states: 'CCCCO',
  },
  {
    name: 'the same error 5 times opens it, even while the workspace changes',
    episodes: times(5, {
      outcome: 'failed' as Outcome,
      evidence: { ...moved, errorFingerprint: 'TypeError: x is undefined at <path>' },
    }),
    states: 'CCCCO',
  },
  {
    name: 'a different error resets the count',
    episodes: [
      ...times(4, { outcome: 'failed' as Outcome, evidence: { errorFingerprint: 'E1' } }),
      { outcome: 'failed' as Outcome, evidence: { errorFingerprint: 'E2' } },
      ...times(3, { outcome: 'failed' as Outcome, evidence: { errorFingerprint: 'E2' } }),
    ],
    states: 'CCCCCCCC',
  },
  {
    name: 'sameErrorEpisodes 0 turns that rule off',
    episodes: times(9, { outcome: 'failed' as Outcome, evidence: { ...moved, errorFingerprint: 'E' } }),
    spec: { sameErrorEpisodes: 0 },
    states: 'C'.repeat(9),
  },
];

for (const c of cases) {
  test(`breaker: ${c.name}`, () => {
    const states = run(c.episodes, { ...SPEC, ...c.spec })
      .map((b) => b.state[0])
      .join('');
    assert.equal(states, c.states);
  });
}

test('breaker: a slow task that progresses every 8th episode never trips, over 200 episodes', () => {
  const episodes = Array.from({ length: 200 }, (_, i) => ({ evidence: (i + 1) % 8 === 0 ? moved : still }));
  const states = run(episodes);
  assert.ok(!states.some((b) => b.state === 'Open'));
  assert.ok(
    states.some((b) => b.state === 'HalfOpen'),
    'it does warn',
  );
});

test('breaker: one episode fewer of progress (every 9th) opens it', () => {
  const episodes = Array.from({ length: 9 }, (_, i) => ({ evidence: (i + 1) % 9 === 0 ? moved : still }));
  assert.equal(run(episodes).at(-1)?.state, 'Open');
});

test('breaker: opening says which rule tripped and shows the evidence; it stays open', () => {
  let b: BreakerStatus = CLOSED;
  let message: string | undefined;
  for (let i = 0; i < 8; i++)
    ({ breaker: b, message } = stepBreaker(b, SPEC, { outcome: 'continue', evidence: still, at: AT }));
  assert.equal(b.trippedBy, 'noProgress');
  assert.match(message ?? '', /no progress in 8 episodes in a row \(HEAD abc, tree unchanged; no progress yet\)/);
  assert.equal(
    stepBreaker(b, SPEC, { outcome: 'succeeded', evidence: moved, at: AT }).breaker.state,
    'Open',
    'only a resume closes it',
  );
});

test('breaker: transitions are reported with their rule', () => {
  let b: BreakerStatus = CLOSED;
  const transitions: string[] = [];
  for (const evidence of [...times(5, still), moved]) {
    const step = stepBreaker(b, SPEC, { outcome: 'continue', evidence, at: AT });
    b = step.breaker;
    if (step.transition) transitions.push(`${step.transition.from}→${step.transition.to} (${step.transition.rule})`);
  }
  assert.deepEqual(transitions, ['Closed→HalfOpen (noProgress)', 'HalfOpen→Closed (progress)']);
  assert.equal(b.lastProgressAt, AT);
});

test('breaker: re-opening a task (spec edit, resume) puts an Open breaker on trial; any other state is kept', () => {
  const open: BreakerStatus = { state: 'Open', noProgress: 7, halfOpen: 3, sameError: 2, lastErrorFingerprint: 'e' };
  assert.deepEqual(reopenBreaker(open), { ...open, state: 'HalfOpen', halfOpen: 0 });
  const halfOpen: BreakerStatus = { ...open, state: 'HalfOpen', halfOpen: 1 };
  for (const kept of [undefined, CLOSED, halfOpen]) assert.equal(reopenBreaker(kept), kept);
});
