// Table tests for ops refused while applying (issue 28): the status and the record name each refused op
// ("(rejected)" in ops, its reason in opsRejected), bounded and redacted; the others read as applied.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { ApplyRejection, Op } from '../../controller/api/ops.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import { withApplyRejections } from '../../controller/reconciler/ops.ts';

type Fields = { ops?: string[]; opsRejected?: string };
const NOW = new Date('2026-11-25T12:00:00.000Z');
const spawn = (name: string): Op => ({ op: 'spawn', name, prompt: 'x' });
const set = (key: string): Op => ({ op: 'set', key, value: 'v' });
const refuse = (index: number, op: ApplyRejection['op'], message: string): ApplyRejection => ({ index, op, message });

const cases: Array<{
  name: string;
  words: string[];
  pending: Op[];
  refused: ApplyRejection[];
  before?: string;
  ops: string[];
  opsRejected: string | undefined;
}> = [
  {
    name: 'nothing refused: unchanged',
    words: ['set a', 'spawn w'],
    pending: [set('a'), spawn('w')],
    refused: [],
    ops: ['set a', 'spawn w'],
    opsRejected: undefined,
  },
  {
    name: 'the refused spawn is marked; push and sleep words are not counted among the applied ops',
    words: ['push 1', 'spawn w', 'sleep 5s', 'spawn x'],
    pending: [spawn('w'), spawn('x')],
    refused: [refuse(1, 'spawn', 'spawn x: maxChildren 1 reached')],
    ops: ['push 1', 'spawn w', 'sleep 5s', 'spawn x (rejected)'],
    opsRejected: 'spawn x: maxChildren 1 reached',
  },
  {
    name: 'after the parse-time rejections, the apply-time ones',
    words: ['set a', 'spawn w'],
    pending: [set('a'), spawn('w')],
    refused: [refuse(0, 'set', 'set a: the blackboard holds 256 keys already')],
    before: 'line 3: send: to: must be a lowercase DNS label',
    ops: ['set a (rejected)', 'spawn w'],
    opsRejected: 'line 3: send: to: must be a lowercase DNS label; set a: the blackboard holds 256 keys already',
  },
  {
    name: "a rejection that names no op given (another episode's) is ignored",
    words: ['set a'],
    pending: [set('a')],
    refused: [refuse(4, 'spawn', 'spawn q: maxChildren 1 reached'), refuse(0, 'spawn', 'kind mismatch')],
    ops: ['set a'],
    opsRejected: undefined,
  },
  {
    name: 'a secret of the spec is redacted from a reason',
    words: ['spawn w'],
    pending: [spawn('w')],
    refused: [refuse(0, 'spawn', 'spawn w: token sk-SECRET-9 refused')],
    ops: ['spawn w (rejected)'],
    opsRejected: 'spawn w: token [redacted] refused',
  },
];

for (const c of cases) {
  test(`withApplyRejections: ${c.name}`, () => {
    const out = withApplyRejections({ ops: c.words, opsRejected: c.before }, c.pending, c.refused, ['sk-SECRET-9']);
    assert.deepEqual(out.ops, c.ops);
    assert.equal(out.opsRejected, c.opsRejected ?? c.before);
  });
}

test('withApplyRejections: bounded — 32 refused ops keep 7 reasons and a count, at most 1,000 characters', () => {
  const pending = Array.from({ length: 32 }, (_, i) => spawn(`w${i}`));
  const refused = pending.map((_, i) => refuse(i, 'spawn', `spawn w${i}: ${'z'.repeat(300)}`));
  const out = withApplyRejections<Fields>({ ops: pending.map((_, i) => `spawn w${i}`) }, pending, refused, []);
  assert.ok((out.opsRejected ?? '').length <= 1000);
  assert.equal(out.ops?.filter((w) => w.endsWith(' (rejected)')).length, 32);
  const long = withApplyRejections({ ops: [`spawn ${'n'.repeat(75)}`] }, [spawn('n')], [refuse(0, 'spawn', 'no')], []);
  assert.ok((long.ops?.[0] ?? '').length <= 80 && long.ops?.[0]?.endsWith(' (rejected)'));
  const few = withApplyRejections<Fields>({ ops: ['spawn a'] }, pending, refused, []);
  assert.match(few.opsRejected ?? '', /25 more ops refused while applying$/);
});

test('reconcile: the pass after ApplyOps names the refused ops in status.lastEpisode; one without refusals does not', () => {
  const spec = AgentTaskSpecSchema.parse({ agent: { command: ['agent'] }, prompt: 'p' });
  const ops: Op[] = [spawn('w'), spawn('x')];
  const ended = reconcile({
    namespace: 'default',
    name: 't',
    generation: 1,
    spec,
    status: {
      ...emptyStatus(),
      observedGeneration: 1,
      phase: 'Running',
      episodes: 1,
      currentEpisode: { number: 1, startedAt: NOW.toISOString() },
    },
    episode: { number: 1, state: 'finished', result: episodeResult({ exitCode: 0, ops }) },
    dependencies: {},
    freeSlots: 1,
    now: NOW,
    jitter: 0.5,
  });
  assert.deepEqual(ended.status.lastEpisode?.ops, ['spawn w', 'spawn x']);
  const next: ReconcileInput = {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec,
    status: ended.status,
    dependencies: {},
    freeSlots: 1,
    now: NOW,
    jitter: 0.5,
    opsApplied: 1,
  };
  const refused = reconcile({ ...next, opsRefused: [refuse(1, 'spawn', 'spawn x: maxChildren 1 reached')] });
  assert.equal(refused.status.pendingOps, undefined);
  assert.deepEqual(refused.status.lastEpisode?.ops, ['spawn w', 'spawn x (rejected)']);
  assert.equal(refused.status.lastEpisode?.opsRejected, 'spawn x: maxChildren 1 reached');
  const clean = reconcile(next);
  assert.deepEqual(clean.status.lastEpisode?.ops, ['spawn w', 'spawn x']);
  assert.equal(clean.status.lastEpisode?.opsRejected, undefined);
  // What another episode's ApplyOps refused says nothing about this one.
  const stale = reconcile({ ...next, opsApplied: 2, opsRefused: [refuse(1, 'spawn', 'old')] });
  assert.equal(stale.status.lastEpisode?.opsRejected, undefined);
});
