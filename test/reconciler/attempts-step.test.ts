// Tables for best-of-N on a step (issue 32 §2): the current step's attempts are one-step tasks
// TASK-STEP-attempt-N on episodic/TASK-STEP/attempt-N; once the winner's branch is the task's, the step
// succeeds with the winner's outputs and the task goes on to its next step. Spec rules name the field.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import { validateSpec } from '../../controller/api/validate.ts';
import { attemptsPass } from '../../controller/reconciler/attempts.ts';
import type { ChildView } from '../../controller/reconciler/children.ts';
import { syncSteps } from '../../controller/reconciler/steps.ts';

const git = { git: { url: 'https://example.com/r.git', ref: 'work' } };
const now = new Date('2026-01-01T00:00:00Z');

function spec(over: Record<string, unknown> = {}): AgentTaskSpec {
  const v = validateSpec({
    agent: { command: ['claude', '-p'] },
    workspace: git,
    integrate: { into: 'main', queue: 'q' },
    steps: [
      {
        name: 'impl',
        prompt: 'implement it',
        gates: [{ name: 'test', check: ['npm', 'test'] }],
        attempts: { count: 2 },
      },
      { name: 'report', prompt: 'report' },
    ],
    ...over,
  });
  assert.ok(v.ok, JSON.stringify(v));
  return v.spec;
}

const inStep1 = (s: AgentTaskSpec): AgentTaskStatus => syncSteps(emptyStatus(), s, 1).status;
const child = (n: number, phase: ChildView['phase'], changedLines: number): ChildView => ({
  name: `t-impl-attempt-${n}`,
  phase,
  costUSD: 0,
  outputs: { note: `from ${n}` },
  evidence: { changedLines, gatesPassed: phase === 'Succeeded' },
});

describe('attempts on a step', () => {
  const s = spec();

  it("the step's attempts are one-step tasks of it, on their own branches, without integrate", () => {
    const out = attemptsPass({ task: 't', spec: s, status: inStep1(s), children: [], create: true, now });
    assert.equal(out?.status.reason, 'AttemptsRunning');
    const made = out?.actions[0]?.type === 'CreateTasks' ? out.actions[0].tasks : [];
    assert.deepEqual(
      made.map((m) => m.name),
      ['t-impl-attempt-1', 't-impl-attempt-2'],
    );
    const first = made[0]?.spec as AgentTaskSpec;
    assert.deepEqual(first.workspace, { git: { ...git.git, ref: 'episodic/t-impl/attempt-1', from: 'work' } });
    assert.equal(first.integrate, undefined);
    assert.equal(first.attempts, undefined);
    assert.deepEqual(
      first.steps?.map((st) => [st.name, st.prompt, st.gates?.map((g) => g.name), st.attempts]),
      [['impl', 'implement it', ['test'], undefined]],
    );
    assert.ok(validateSpec(first).ok, 'a valid spec');
  });

  it("the winner's branch is made the task's; then the step succeeds with its outputs and the next is due", () => {
    const children = [child(1, 'Succeeded', 9), child(2, 'Succeeded', 3)];
    const base = { task: 't', spec: s, status: inStep1(s), children, create: true, now };
    const adopting = attemptsPass({ ...base, adoption: { supported: true } });
    assert.deepEqual(adopting?.actions, [
      {
        type: 'AdoptWinner',
        winner: 2,
        from: 'episodic/t-impl/attempt-2',
        into: 'work',
        deleteBranches: ['episodic/t-impl/attempt-1'],
      },
    ]);
    const adopted = { into: 'work', commit: 'c0ffee', deletedBranches: [], keptBranches: [] };
    const outcome = { winner: 2, from: 'episodic/t-impl/attempt-2', ok: true as const, adopted };
    const done = attemptsPass({ ...base, adoption: { supported: true, outcome } });
    assert.equal(done?.status.phase, 'Pending', done?.status.message);
    assert.equal(done?.status.step?.name, 'report');
    assert.deepEqual(done?.status.steps?.[0]?.outputs, { note: 'from 2', branch: 'episodic/t-impl/attempt-2' });
    assert.equal(done?.status.steps?.[0]?.phase, 'Succeeded');
    assert.equal(done?.status.attempts?.winner, 2);
  });

  it('in a step without attempts nothing happens here', () => {
    const status = { ...inStep1(s), step: { index: 2, name: 'report', summary: '2/2 report', generation: 1 } };
    assert.equal(attemptsPass({ task: 't', spec: s, status, children: [], create: true, now }), undefined);
  });

  it('spec rules: attempts on a step need a git workspace, and are not with forEach nor with task attempts', () => {
    const problems = (over: Record<string, unknown>) => {
      const v = validateSpec({ agent: { command: ['a'] }, workspace: git, ...over });
      return v.ok ? [] : v.errors;
    };
    const step = { name: 'impl', prompt: 'p', attempts: { count: 2 } };
    assert.match(problems({ workspace: 'ws/x', steps: [step] }).join('\n'), /steps\[0\]\.attempts.*git workspace/);
    const both = { ...step, forEach: { items: ['a'] } };
    assert.match(problems({ steps: [both] }).join('\n'), /forEach or attempts, not both/);
    assert.match(
      problems({ steps: [step], attempts: { count: 2 } }).join('\n'),
      /steps\[0\]\.attempts.*on the task and on a step, not both/,
    );
  });
});
