// The leash's metrics, read off status transitions: which breaker moves count under which rule, and the
// waiting gauge following a task through its reasons. Real prom-client registry, read as Prometheus text.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import type { BreakerStatus } from '../../controller/api/leash.ts';
import { breakerTransition } from '../../controller/metrics/leash-metrics.ts';
import { EpisodicMetrics } from '../../controller/metrics/metrics.ts';

const breaker = (state: BreakerStatus['state'], trippedBy?: BreakerStatus['trippedBy']): AgentTaskStatus => ({
  ...emptyStatus(),
  breaker: { state, noProgress: 0, halfOpen: 0, sameError: 0, ...(trippedBy ? { trippedBy } : {}) },
});

test('breaker transitions: the state entered and the rule that moved it', () => {
  const cases: Array<[string, AgentTaskStatus | undefined, AgentTaskStatus, ReturnType<typeof breakerTransition>]> = [
    ['no breaker yet, none now', undefined, emptyStatus(), undefined],
    ['Closed stays Closed', breaker('Closed'), breaker('Closed'), undefined],
    ['Closed → HalfOpen: no progress', breaker('Closed'), breaker('HalfOpen'), { to: 'HalfOpen', rule: 'noProgress' }],
    [
      'HalfOpen → Open: no progress',
      breaker('HalfOpen'),
      breaker('Open', 'noProgress'),
      { to: 'Open', rule: 'noProgress' },
    ],
    [
      'Closed → Open: the same error',
      breaker('Closed'),
      breaker('Open', 'sameError'),
      { to: 'Open', rule: 'sameError' },
    ],
    ['HalfOpen → Closed: progress', breaker('HalfOpen'), breaker('Closed'), { to: 'Closed', rule: 'progress' }],
    [
      'Open → HalfOpen: a spec edit or a resume',
      breaker('Open', 'noProgress'),
      breaker('HalfOpen', 'noProgress'),
      { to: 'HalfOpen', rule: 'reopened' },
    ],
    ['Open → gone: reset', breaker('Open', 'sameError'), emptyStatus(), { to: 'Closed', rule: 'reset' }],
  ];
  for (const [name, before, after, want] of cases) assert.deepEqual(breakerTransition(before, after), want, name);
});

test('metrics: breaker transitions counted from observed statuses; the waiting gauge follows each task', async () => {
  const m = new EpisodicMetrics({ defaultMetrics: false });
  m.observeTransition('team-a', breaker('Closed'), breaker('HalfOpen'));
  m.observeTransition('team-a', breaker('HalfOpen'), breaker('Open', 'noProgress'));
  m.observeTransition('team-a', breaker('Open', 'noProgress'), breaker('Open', 'noProgress'));
  const waiting = (reason: string): AgentTaskStatus => ({ ...emptyStatus(), phase: 'Waiting', reason });
  m.leash.trackWaiting('team-a/x', 'team-a', waiting('Backoff'));
  m.leash.trackWaiting('team-a/y', 'team-a', waiting('Backoff'));
  m.leash.trackWaiting('team-b/z', 'team-b', waiting('UsageLimit'));
  m.leash.trackWaiting('team-a/y', 'team-a', waiting('BudgetWindow'));
  m.leash.trackWaiting('team-a/x', 'team-a', { ...emptyStatus(), phase: 'Running' });
  m.leash.trackWaiting('team-b/z', 'team-b', undefined);
  const text = await m.text();
  assert.match(text, /episodic_breaker_transitions_total\{namespace="team-a",to="HalfOpen",rule="noProgress"\} 1\n/);
  assert.match(text, /episodic_breaker_transitions_total\{namespace="team-a",to="Open",rule="noProgress"\} 1\n/);
  assert.match(text, /episodic_tasks_waiting\{namespace="team-a",reason="Backoff"\} 0\n/);
  assert.match(text, /episodic_tasks_waiting\{namespace="team-a",reason="BudgetWindow"\} 1\n/);
  assert.match(text, /episodic_tasks_waiting\{namespace="team-b",reason="UsageLimit"\} 0\n/);
});
