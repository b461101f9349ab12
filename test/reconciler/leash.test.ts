// The leash's rules inside reconcile(): completion needs evidence, the breaker stops a loop that makes no
// progress, and both are explained in status and events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import type { Evidence } from '../../controller/api/leash.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import { ending } from '../support/ending-episode.ts';

const still: Evidence = { workspace: { kind: 'git', changed: false, headBefore: 'a1', headAfter: 'a1', dirty: false } };
const moved: Evidence = { workspace: { kind: 'git', changed: true, headBefore: 'a1', headAfter: 'b2', dirty: false } };

const cases: Array<{
  name: string;
  in: ReconcileInput;
  phase: string;
  reason: string;
  message?: RegExp;
  outcome?: string;
}> = [
  {
    name: 'a promise with the changes it requires succeeds',
    in: ending({ completion: { requires: ['changes'] } }, { exitCode: 0, completion: 'promise', evidence: moved }),
    phase: 'Succeeded',
    reason: 'PromiseDetected',
  },
  {
    name: 'a promise without any change in this run only continues, naming what is missing',
    in: ending({ completion: { requires: ['changes'] } }, { exitCode: 0, completion: 'promise', evidence: still }),
    phase: 'Pending',
    reason: 'MissingEvidence',
    message: /missing changes \(no episode of this run changed the workspace\)/,
    outcome: 'continue',
  },
  {
    name: 'changes from an earlier episode of the run count',
    in: ending(
      { completion: { requires: ['changes'] } },
      { exitCode: 0, completion: 'promise', evidence: still },
      { workspaceChanges: 2 },
      3,
    ),
    phase: 'Succeeded',
    reason: 'PromiseDetected',
  },
  {
    name: 'cleanTree: uncommitted changes left → continue',
    in: ending(
      { completion: { requires: ['cleanTree'] } },
      { exitCode: 0, completion: 'promise', evidence: { workspace: { ...moved.workspace!, dirty: true } } },
    ),
    phase: 'Pending',
    reason: 'MissingEvidence',
    message: /cleanTree \(uncommitted changes are left\)/,
  },
  {
    name: 'minEpisodes: no completion before episode N',
    in: ending({ completion: { minEpisodes: 3 } }, { exitCode: 0, completion: 'promise' }, {}, 2),
    phase: 'Pending',
    reason: 'MissingEvidence',
    message: /minEpisodes \(episode 2 of at least 3\)/,
  },
  {
    name: 'requires checklist: 4/5 done is not done',
    in: ending(
      { progress: { checklist: 'PLAN.md' }, completion: { requires: ['checklist'] } },
      {
        exitCode: 0,
        completion: 'promise',
        evidence: { checklist: { done: 3, skipped: 1, total: 5, inProgress: 1, failed: 0 } },
      },
    ),
    phase: 'Pending',
    reason: 'MissingEvidence',
    message: /checklist \(4\/5 done\)/,
  },
  {
    name: 'completion.checklist: a complete checklist finishes the task without a promise',
    in: ending(
      { progress: { checklist: 'PLAN.md' }, completion: { checklist: true } },
      { exitCode: 0, evidence: { checklist: { done: 4, skipped: 1, total: 5, inProgress: 0, failed: 0 } } },
    ),
    phase: 'Succeeded',
    reason: 'ChecklistComplete',
  },
  {
    name: 'the 8th episode without progress opens the breaker: NeedsReview, CircuitOpen',
    in: ending(
      {},
      { exitCode: 0, evidence: still },
      { breaker: { state: 'HalfOpen', noProgress: 7, halfOpen: 2, sameError: 0 } },
      8,
    ),
    phase: 'NeedsReview',
    reason: 'CircuitOpen',
    message: /no progress in 8 episodes in a row/,
  },
  {
    name: 'the same error the 5th time opens the breaker, before the failure limit would skip it',
    in: ending(
      { limits: { maxConsecutiveFailures: 10 } },
      { exitCode: 1, evidence: { errorFingerprint: 'ENOENT: no such file <path>' } },
      {
        breaker: {
          state: 'Closed',
          noProgress: 0,
          halfOpen: 0,
          sameError: 4,
          lastErrorFingerprint: 'ENOENT: no such file <path>',
        },
        consecutiveFailures: 4,
      },
      5,
    ),
    phase: 'NeedsReview',
    reason: 'CircuitOpen',
    message: /the same error 5 episodes in a row: ENOENT/,
  },
];

for (const c of cases) {
  test(`leash: ${c.name}`, () => {
    const out = reconcile(c.in);
    if (c.reason === 'MissingEvidence') {
      // Recorded as continue, the next episode due; the claim and what it lacked are in the record and an event.
      assert.equal(out.status.lastEpisode?.outcome, 'continue');
      assert.match(out.status.lastEpisode?.message ?? '', c.message ?? /./);
      assert.ok(
        out.actions.some(
          (a) => a.type === 'RecordEvent' && a.reason === 'CompletionRejected' && c.message!.test(a.message),
        ),
      );
      assert.notEqual(out.status.phase, 'Succeeded');
      return;
    }
    assert.equal(out.status.phase, c.phase);
    assert.equal(out.status.reason, c.reason);
    if (c.message) assert.match(out.status.message ?? '', c.message);
    if (c.outcome) assert.equal(out.status.lastEpisode?.outcome, c.outcome);
  });
}

test('leash: an open breaker is explained in an event and status.breaker; nothing more starts', () => {
  const out = reconcile({ ...cases[7].in, freeSlots: 1 });
  assert.equal(out.status.breaker?.state, 'Open');
  assert.equal(out.status.breaker?.trippedBy, 'noProgress');
  assert.ok(out.actions.some((a) => a.type === 'RecordEvent' && a.reason === 'CircuitOpen'));
  assert.ok(!out.actions.some((a) => a.type === 'StartEpisode'));
});

test('leash: a checklist and workspace changes are kept in status', () => {
  const out = reconcile(
    ending(
      { progress: { checklist: 'PLAN.md' } },
      { exitCode: 0, evidence: { ...moved, checklist: { done: 7, total: 12, inProgress: 1, failed: 0, skipped: 0 } } },
    ),
  );
  assert.deepEqual(out.status.progress, { done: 7, total: 12, inProgress: 1, failed: 0, skipped: 0, summary: '7/12' });
  assert.equal(out.status.workspaceChanges, 1);
});

test('leash: the Progress column counts skipped items as settled, and keeps the last checklist when an episode read none', () => {
  const ticked = reconcile(
    ending(
      { progress: { checklist: 'PLAN.md' } },
      { exitCode: 0, evidence: { checklist: { done: 10, total: 12, inProgress: 0, failed: 0, skipped: 2 } } },
    ),
  );
  assert.equal(ticked.status.progress?.summary, '12/12');
  const unread = reconcile(
    ending(
      { progress: { checklist: 'PLAN.md' } },
      { exitCode: 0 },
      { progress: { done: 1, total: 4, inProgress: 0, failed: 0, skipped: 0, summary: '1/4' } },
    ),
  );
  assert.equal(unread.status.progress?.summary, '1/4');
});

test('leash: editing the spec of a CircuitOpen task re-opens it HalfOpen with its run evidence reset', () => {
  const open: AgentTaskStatus = {
    ...emptyStatus(),
    observedGeneration: 1,
    phase: 'NeedsReview',
    reason: 'CircuitOpen',
    episodes: 8,
    workspaceChanges: 3,
    breaker: { state: 'Open', noProgress: 8, halfOpen: 3, sameError: 0, trippedBy: 'noProgress' },
  };
  const out = reconcile({
    ...ending({}, { exitCode: 0 }),
    status: open,
    episode: undefined,
    generation: 2,
    freeSlots: 1,
  });
  assert.equal(out.status.breaker?.state, 'HalfOpen');
  assert.equal(out.status.workspaceChanges, 0);
  assert.ok(out.actions.some((a) => a.type === 'StartEpisode'));
});

test('leash: spec validation names what a checklist or verify requirement needs', () => {
  const bad = AgentTaskSpecSchema.safeParse({
    prompt: 'p',
    agent: { command: ['a'] },
    completion: { requires: ['verify', 'checklist'] },
  });
  assert.equal(bad.success, false);
  const paths = bad.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];
  assert.ok(
    paths.includes('completion.requires: requires verify, but completion.verify names no command'),
    paths.join('\n'),
  );
  assert.ok(
    paths.includes('progress.checklist: a checklist completion needs progress.checklist (the plan file)'),
    paths.join('\n'),
  );
});
