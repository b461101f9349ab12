import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import {
  CREDENTIALS_EXHAUSTED,
  CREDENTIALS_RESUME_JITTER_MS,
  credentialsHold,
} from '../../controller/reconciler/credentials-hold.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';

const makeSpec = (agent: Record<string, unknown>) =>
  AgentTaskSpecSchema.parse({ prompt: 'do it', agent: { command: ['agent'], ...agent } });
const now = new Date('2026-06-01T12:00:00Z');
const at = (ms: number) => new Date(now.getTime() + ms);
const reset = at(2 * 3_600_000);
const paused = { credentials: 'claude-pool', until: reset };
const held = (wake: Date): AgentTaskStatus => ({
  ...emptyStatus(),
  phase: 'Waiting',
  reason: CREDENTIALS_EXHAUSTED,
  message: 'held',
  nextEpisodeAt: wake.toISOString(),
});

describe('credentialsHold: no episode starts into a pool that is all paused', () => {
  it('holds until the reset plus the jitter drawn, with the earliest reset in the message and one event', () => {
    const v = credentialsHold(emptyStatus(), paused, now, 0.5);
    assert.equal(v.kind, 'hold');
    if (v.kind !== 'hold') return;
    assert.equal(v.status.phase, 'Waiting');
    assert.equal(v.status.reason, CREDENTIALS_EXHAUSTED);
    assert.match(v.status.message ?? '', /AgentCredentials claude-pool .* earliest reset is 2026-06-01T14:00:00\.000Z/);
    const wake = reset.getTime() + CREDENTIALS_RESUME_JITTER_MS / 2;
    assert.equal(v.status.nextEpisodeAt, new Date(wake).toISOString());
    assert.equal(v.requeueAfterMs, wake - now.getTime());
    assert.deepEqual(
      v.events.map((e) => e.reason),
      [CREDENTIALS_EXHAUSTED],
    );
  });

  it('different jitter, different wake times within the jitter window: held tasks do not all start at once', () => {
    const wakes = [0, 0.25, 0.999].map((j) => {
      const v = credentialsHold(emptyStatus(), paused, now, j);
      return v.kind === 'hold' ? Date.parse(v.status.nextEpisodeAt ?? '') - reset.getTime() : -1;
    });
    assert.deepEqual(wakes, [0, CREDENTIALS_RESUME_JITTER_MS / 4, Math.floor(0.999 * CREDENTIALS_RESUME_JITTER_MS)]);
  });

  it('a second pass keeps the wake time drawn and says nothing new', () => {
    const wake = at(2 * 3_600_000 + 7000);
    const v = credentialsHold(held(wake), paused, at(1000), 0.9);
    assert.equal(v.kind, 'hold');
    if (v.kind !== 'hold') return;
    assert.equal(v.status.nextEpisodeAt, wake.toISOString());
    assert.deepEqual(v.events, []);
  });

  it('a later reset draws a new wake time', () => {
    const v = credentialsHold(held(at(2 * 3_600_000 + 7000)), { ...paused, until: at(5 * 3_600_000) }, now, 0);
    assert.equal(v.kind === 'hold' && v.status.nextEpisodeAt, at(5 * 3_600_000).toISOString());
  });

  it('not paused: goes on, the status as it was', () => {
    const s = emptyStatus();
    assert.deepEqual(credentialsHold(s, undefined, now, 0), { kind: 'go', status: s });
  });

  it('after the reset, inside the jitter: goes on, the task keeps its wake time (the backoff check waits for it)', () => {
    const s = held(at(10_000));
    assert.deepEqual(credentialsHold(s, undefined, now, 0), { kind: 'go', status: s });
  });

  it('a pool freed long before its reset (a credential added) frees the task now', () => {
    const v = credentialsHold(held(reset), undefined, now, 0);
    assert.equal(v.kind, 'go');
    assert.equal(v.status.nextEpisodeAt, undefined);
  });
});

describe('reconcile: the pool fact before a start', () => {
  const input = (over: Partial<ReconcileInput>): ReconcileInput => ({
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: makeSpec({ credentials: 'claude-pool' }),
    status: emptyStatus(),
    dependencies: {},
    freeSlots: 1,
    now,
    jitter: 0,
    ...over,
  });

  it('paused: Waiting CredentialsExhausted, no StartEpisode, requeued at the reset', () => {
    const out = reconcile(input({ credentialsPaused: paused }));
    assert.equal(out.status.phase, 'Waiting');
    assert.equal(out.status.reason, CREDENTIALS_EXHAUSTED);
    assert.ok(!out.actions.some((a) => a.type === 'StartEpisode'));
    assert.equal(out.requeueAfterMs, reset.getTime() - now.getTime());
  });

  it('after the wake time: the episode starts', () => {
    const out = reconcile(input({ status: held(at(-1)), now }));
    assert.ok(out.actions.some((a) => a.type === 'StartEpisode'));
  });

  it('a task without spec.agent.credentials is not held by a pool fact', () => {
    const out = reconcile(input({ spec: makeSpec({}), credentialsPaused: paused }));
    assert.ok(out.actions.some((a) => a.type === 'StartEpisode'));
  });
});
