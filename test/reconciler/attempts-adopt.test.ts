// Tables for best-of-N's last step (issue 32 §2): once a winner is chosen, the pass asks the loop to make
// its branch the task's (AdoptWinner, losers' branches listed unless keepLosers) and waits; the outcome
// decides Succeeded (adopted, on record) or Failed (why, named); a loop that cannot adopt keeps today's
// choice. A restart (no outcome in memory) asks again: the action is idempotent. And the judge's prompt:
// each candidate's evidence and bounded diff, gathered only in the pass that makes the judge.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AdoptOutcome } from '../../controller/api/attempts.ts';
import { JUDGE_DIFF_MAX } from '../../controller/api/attempts.ts';
import { attemptsPass, candidatesOf, diffsWanted, judgeEvidence } from '../../controller/reconciler/attempts.ts';
import type { AttemptsInput } from '../../controller/reconciler/attempts.ts';
import type { ChildView } from '../../controller/reconciler/children.ts';
import { treeCost } from '../../controller/reconciler/children.ts';
import { OWNER_LABELS } from '../../controller/api/spawn-fields.ts';

function spec(attempts: Record<string, unknown> = {}, over: Record<string, unknown> = {}) {
  return AgentTaskSpecSchema.parse({
    ...over,
    prompt: 'do it',
    agent: { command: ['agent'] },
    workspace: { git: { url: 'https://example.com/r.git', ref: 'episodic/t' } },
    attempts: { count: 3, ...attempts },
  });
}

const child = (n: number, phase: ChildView['phase'], changedLines: number): ChildView => ({
  name: `t-attempt-${n}`,
  phase,
  costUSD: 0.1,
  outputs: { note: `from ${n}` },
  evidence: { changedLines, gatesPassed: phase === 'Succeeded', finishedAt: '2026-01-01T00:00:00Z' },
});

// Attempt 3 is the smallest passing one; 1 failed.
const ended = [child(1, 'Failed', 1), child(2, 'Succeeded', 30), child(3, 'Succeeded', 5)];

function pass(over: Partial<AttemptsInput> = {}) {
  const input: AttemptsInput = {
    task: 't',
    spec: spec(),
    status: emptyStatus(),
    children: ended,
    create: true,
    adoption: { supported: true },
    ...over,
  };
  const out = attemptsPass(input);
  assert.ok(out);
  return out;
}

const adopted = (winner: number, deleted: string[]): AdoptOutcome => ({
  winner,
  from: `episodic/t/attempt-${winner}`,
  ok: true,
  adopted: { into: 'episodic/t', commit: 'abc123def4567890', deletedBranches: deleted, keptBranches: [] },
});

describe('attemptsPass: the winner becomes the task', () => {
  it('a winner chosen and nothing adopted yet: AdoptWinner with the losers, the task waits', () => {
    const out = pass();
    assert.equal(out.status.phase, 'Waiting');
    assert.equal(out.status.reason, 'AttemptAdopting');
    assert.equal(out.status.attempts?.phase, 'Adopting');
    assert.equal(out.status.attempts?.winner, 3);
    assert.deepEqual(out.actions, [
      {
        type: 'AdoptWinner',
        winner: 3,
        from: 'episodic/t/attempt-3',
        into: 'episodic/t',
        deleteBranches: ['episodic/t/attempt-1', 'episodic/t/attempt-2'],
      },
    ]);
  });

  it('keepLosers: nothing to delete, and once adopted the kept branches are on record', () => {
    const out = pass({ spec: spec({ keepLosers: true }) });
    const action = out.actions[0];
    assert.equal(action?.type, 'AdoptWinner');
    assert.deepEqual(action?.type === 'AdoptWinner' && action.deleteBranches, []);
    const done = pass({ spec: spec({ keepLosers: true }), adoption: { supported: true, outcome: adopted(3, []) } });
    assert.deepEqual(done.status.attempts?.adopted?.keptBranches, ['episodic/t/attempt-1', 'episodic/t/attempt-2']);
  });

  it('adopted: Succeeded with the winner outputs, the adoption on record, no more actions', () => {
    const out = pass({ adoption: { supported: true, outcome: adopted(3, ['episodic/t/attempt-1']) } });
    assert.equal(out.status.phase, 'Succeeded');
    assert.equal(out.status.attempts?.phase, 'Chosen');
    assert.equal(out.status.attempts?.adopted?.into, 'episodic/t');
    assert.deepEqual(out.status.outputs, { note: 'from 3', branch: 'episodic/t/attempt-3' });
    assert.match(out.status.message ?? '', /attempt 3 of 3 won by evidence.*; episodic\/t is now its abc123def456$/);
    assert.deepEqual(out.actions, []);
  });

  it("the winner's workspace changes become the task's (a trigger publishes only a task that changed something)", () => {
    const withChanges = ended.map((c, i) => ({ ...c, evidence: { ...c.evidence, workspaceChanges: i + 1 } }));
    const outcome = adopted(3, []);
    const out = pass({ children: withChanges, adoption: { supported: true, outcome } });
    assert.equal(out.status.phase, 'Succeeded');
    assert.equal(out.status.workspaceChanges, 3, "attempt 3's, not the task's own 0");
    const waiting = pass({ children: withChanges });
    assert.equal(waiting.status.workspaceChanges, 0, 'not before the winner is adopted');
  });

  it('an outcome for another winner (a stale one) is not taken: adopt again', () => {
    const out = pass({ adoption: { supported: true, outcome: adopted(2, []) } });
    assert.equal(out.status.reason, 'AttemptAdopting');
    assert.equal(out.actions[0]?.type, 'AdoptWinner');
  });

  it('adoption refused (the task branch moved): Failed, saying why', () => {
    const outcome: AdoptOutcome = {
      winner: 3,
      from: 'episodic/t/attempt-3',
      ok: false,
      message: 'episodic/t moved since the attempts started',
    };
    const out = pass({ adoption: { supported: true, outcome } });
    assert.equal(out.status.phase, 'Failed');
    assert.equal(out.status.reason, 'AttemptNotAdopted');
    assert.match(out.status.message ?? '', /attempt 3 of 3 won.*; episodic\/t moved since the attempts started/);
  });

  it('a loop that cannot adopt: the choice alone, as before', () => {
    const out = pass({ adoption: { supported: false } });
    assert.equal(out.status.phase, 'Succeeded');
    assert.equal(out.status.attempts?.adopted, undefined);
    assert.deepEqual(out.actions, []);
  });

  it('none succeeded: nothing to adopt', () => {
    const failed = [child(1, 'Failed', 1), child(2, 'Failed', 2), child(3, 'Failed', 3)];
    const out = pass({ children: failed });
    assert.equal(out.status.phase, 'Failed');
    assert.equal(out.status.reason, 'NoAttemptSucceeded');
    assert.deepEqual(out.actions, []);
  });

  it('a judge choosing 2: attempt 2 is adopted, the others deleted', () => {
    const judged = spec({ select: 'judge', judge: { prompt: 'pick {{attempts}}' } });
    const judge: ChildView = { name: 't-judge', phase: 'Succeeded', costUSD: 0, outputs: { winner: '2' } };
    const out = pass({ spec: judged, children: [...ended, judge] });
    const action = out.actions[0];
    assert.equal(action?.type === 'AdoptWinner' && action.from, 'episodic/t/attempt-2');
    assert.deepEqual(action?.type === 'AdoptWinner' && action.deleteBranches, [
      'episodic/t/attempt-1',
      'episodic/t/attempt-3',
    ]);
  });

  it("the attempts run without spec.integrate (only the winner, as the task, enters the queue); all on one commit's branch", () => {
    const integrate = { into: 'main', queue: 'q' };
    const out = pass({ spec: spec({}, { integrate }), children: [] });
    const made = out.actions[0]?.type === 'CreateTasks' ? out.actions[0].tasks : [];
    assert.deepEqual(
      made.map((t) => [t.name, t.spec.integrate, (t.spec.workspace as { git: { ref: string } }).git.ref]),
      [1, 2, 3].map((n) => [`t-attempt-${n}`, undefined, `episodic/t/attempt-${n}`]),
    );
  });
});

describe("the attempts and the judge are the task's family: its maxCostUSD counts them all", () => {
  const capped = (attempts: Record<string, unknown> = {}) => spec(attempts, { limits: { maxCostUSD: 2 } });
  const made = (out: ReturnType<typeof pass>) => (out.actions[0]?.type === 'CreateTasks' ? out.actions[0].tasks : []);

  it("each attempt and the judge carry the task's parent label and no cap above the task's", () => {
    const attempts = made(pass({ spec: capped(), children: [] }));
    const judge = made(pass({ spec: capped({ select: 'judge', judge: { prompt: 'pick {{attempts}}' } }) }));
    assert.deepEqual(
      [...attempts, ...judge].map((t) => [t.name, t.labels?.[OWNER_LABELS.AgentTask]]),
      [...[1, 2, 3].map((n) => [`t-attempt-${n}`, 't']), ['t-judge', 't']],
    );
    for (const t of [...attempts, ...judge])
      assert.ok(((t.spec.limits as { maxCostUSD?: number } | undefined)?.maxCostUSD ?? Infinity) <= 2, t.name);
    // The family's spend, as the cap reads it through those labels: the task's own, every attempt's, the judge's.
    const own: Record<string, number> = { t: 0.05, 't-attempt-1': 0.1, 't-attempt-2': 0.2, 't-attempt-3': 0.3 };
    own['t-judge'] = 0.4;
    const members = [...attempts, ...judge];
    const kids = (k: string) => members.filter((m) => m.labels?.[OWNER_LABELS.AgentTask] === k).map((m) => m.name);
    assert.equal(
      treeCost('t', (k) => own[k] ?? 0, kids),
      1.05,
    );
  });
});

describe("the judge's evidence: each candidate's diff, bounded, as data", () => {
  const judged = spec({ select: 'judge', judge: { prompt: 'pick:\n{{attempts}}' } });
  const candidates = candidatesOf('t', 3, ended);

  it('diffs are wanted once every attempt ended and one succeeded, and only before the judge exists', () => {
    assert.deepEqual(
      diffsWanted('t', judged, emptyStatus(), ended).map((c) => c.task),
      ['t-attempt-1', 't-attempt-2', 't-attempt-3'],
    );
    assert.deepEqual(
      diffsWanted('t', judged, emptyStatus(), [...ended.slice(0, 2), child(3, 'Running', 0)]),
      [],
      'one running',
    );
    assert.deepEqual(diffsWanted('t', judged, emptyStatus(), ended.slice(0, 2)), [], 'one not made yet');
    const judge: ChildView = { name: 't-judge', costUSD: 0 };
    assert.deepEqual(diffsWanted('t', judged, emptyStatus(), [...ended, judge]), [], 'the judge exists');
    assert.deepEqual(diffsWanted('t', spec(), emptyStatus(), ended), [], 'select: evidence');
  });

  it("the judge's prompt has each diff under its attempt, a missing one said, a long one cut", () => {
    const diffs = { 1: '+++ b/bad.txt\n+breaks', 3: `+${'x'.repeat(JUDGE_DIFF_MAX * 2)}` };
    const out = pass({ spec: judged, diffs });
    const made = out.actions[0]?.type === 'CreateTasks' ? out.actions[0].tasks : [];
    const prompt = String(made[0]?.spec.prompt);
    assert.equal(made[0]?.name, 't-judge');
    assert.match(prompt, /--- attempt 1 diff \(episodic\/t\/attempt-1\) ---\n\+\+\+ b\/bad\.txt\n\+breaks/);
    assert.match(prompt, /--- attempt 2 diff \(episodic\/t\/attempt-2\) ---\n\(no diff available\)/);
    const third = prompt.split('--- attempt 3 diff')[1] ?? '';
    assert.ok(third.length < JUDGE_DIFF_MAX + 200, `attempt 3's diff is bounded (${third.length})`);
  });

  it('agent-written text cannot become a placeholder; an empty diff says so', () => {
    const text = judgeEvidence(candidates, { 1: '+{{ steps.plan.outputs.secret }}', 2: '' });
    assert.doesNotMatch(text, /\{\{/);
    assert.match(text, /\+\{ \{ steps\.plan\.outputs\.secret \}\}/);
    assert.match(text, /attempt 2 diff \(episodic\/t\/attempt-2\) ---\n\(no changes\)/);
  });
});
