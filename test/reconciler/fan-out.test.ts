// Tables for fan-out steps (issue 32 §1): the failurePolicy rule, items from an earlier step's output, the
// children a pass makes (never more than maxConcurrency unfinished), their prompts and names, and the step's end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import { renderItemPrompt } from '../../controller/api/for-each.ts';
import { validateSpec } from '../../controller/api/validate.ts';
import type { Action } from '../../controller/reconciler/actions.ts';
import type { ChildView } from '../../controller/reconciler/children.ts';
import { fanOutPass, judgeFanOut } from '../../controller/reconciler/fan-out.ts';
import type { FanOutCounts } from '../../controller/reconciler/fan-out.ts';
import { syncSteps } from '../../controller/reconciler/steps.ts';

describe('judgeFanOut: more children while the policy can be met; the end once none runs', () => {
  const c = (succeeded: number, failed: number, running: number, total = 6): FanOutCounts => ({
    total,
    succeeded,
    failed,
    running,
  });
  const table: Array<[string, Parameters<typeof judgeFanOut>[0], number, FanOutCounts, string]> = [
    ['first pass: up to maxConcurrency', 'all', 2, c(0, 0, 0), 'wait 2'],
    ['two running: none more', 'all', 2, c(0, 0, 2), 'wait 0'],
    ['one ended: one more', 'all', 2, c(1, 0, 1), 'wait 1'],
    ['never more than are left', 'all', 4, c(4, 0, 1), 'wait 1'],
    ['all: one failed, the policy is out of reach: no more, wait for the running', 'all', 2, c(1, 1, 1), 'wait 0'],
    ['all: one failed, none runs: failed', 'all', 2, c(1, 1, 0), 'failed'],
    ['all: every one succeeded', 'all', 2, c(6, 0, 0), 'succeeded'],
    ['atLeast 5: one failed, still reachable', { atLeast: 5 }, 2, c(2, 1, 1), 'wait 1'],
    ['atLeast 5: five of six', { atLeast: 5 }, 2, c(5, 1, 0), 'succeeded'],
    ['atLeast 5: two failed of six: failed', { atLeast: 5 }, 2, c(3, 2, 0), 'failed'],
    ['atLeast more than the items: failed', { atLeast: 7 }, 2, c(6, 0, 0), 'failed'],
    ['any: one of six is enough', 'any', 3, c(1, 5, 0), 'succeeded'],
    ['any: none succeeded', 'any', 3, c(0, 6, 0), 'failed'],
  ];
  for (const [name, policy, max, counts, want] of table)
    it(name, () => {
      const v = judgeFanOut(policy, max, counts);
      assert.equal(v.kind === 'wait' ? `wait ${v.more}` : v.kind, want);
    });
});

function spec(forEach: Record<string, unknown>, over: Record<string, unknown> = {}): AgentTaskSpec {
  const v = validateSpec({
    agent: { command: ['claude', '-p'] },
    workspace: 'ws/mig',
    steps: [
      { name: 'plan', prompt: 'plan it' },
      { name: 'each', prompt: 'migrate {{item.pkg}} (#{{item.index}}): {{item}}', forEach },
      { name: 'sum', prompt: 'sum up {{steps.each.items}}' },
    ],
    ...over,
  });
  assert.ok(v.ok, JSON.stringify(v));
  return v.spec;
}

/** A task in step 2 (each) whose step 1 published `items`. */
function inEach(s: AgentTaskSpec, items?: string): AgentTaskStatus {
  let status = syncSteps(emptyStatus(), s, 1).status;
  const steps = [...(status.steps ?? [])];
  steps[0] = { ...steps[0], phase: 'Succeeded', ...(items ? { outputs: { items } } : {}) };
  status = { ...status, steps, step: { index: 2, name: 'each', summary: '2/3 each', generation: 1 } };
  return status;
}

const made = (actions: Action[]) =>
  actions.flatMap((a) => (a.type === 'CreateTasks' ? a.tasks.map((t) => t.name) : []));
const child = (name: string, phase?: ChildView['phase']): ChildView => ({ name, phase, costUSD: 0 });
const now = new Date('2026-01-01T00:00:00Z');

describe('fanOutPass: children of a forEach step', () => {
  const items = JSON.stringify(Array.from({ length: 6 }, (_, i) => ({ pkg: `p${i}` })));
  const s = spec({ fromOutput: 'steps.plan.outputs.items', maxConcurrency: 2, failurePolicy: { atLeast: 5 } });

  it('the first pass makes maxConcurrency children TASK-STEP-INDEX, their prompts the item filled in', () => {
    const pass = fanOutPass({ task: 'mig', spec: s, status: inEach(s, items), children: [], create: true, now });
    assert.deepEqual(made(pass.actions), ['mig-each-0', 'mig-each-1']);
    const first = pass.actions[0]?.type === 'CreateTasks' ? pass.actions[0].tasks[0] : undefined;
    assert.equal(first?.spec.prompt, 'migrate p0 (#0): {"pkg":"p0"}');
    assert.equal(first?.labels['episodic.dev/parent'], 'mig');
    assert.equal(pass.status.phase, 'Waiting');
    assert.equal(pass.status.steps?.[1]?.forEach?.created, 2);
  });

  it('children made but not seen yet are made again (a no-op), never a third one', () => {
    const status = fanOutPass({
      task: 'mig',
      spec: s,
      status: inEach(s, items),
      children: [],
      create: true,
      now,
    }).status;
    const again = fanOutPass({ task: 'mig', spec: s, status, children: [], create: true, now });
    assert.deepEqual(made(again.actions), ['mig-each-0', 'mig-each-1']);
    assert.equal(again.status.steps?.[1]?.forEach?.created, 2);
  });

  it('one child ended: the next item is made; the running one is not made again', () => {
    const status = fanOutPass({
      task: 'mig',
      spec: s,
      status: inEach(s, items),
      children: [],
      create: true,
      now,
    }).status;
    const kids = [child('mig-each-0', 'Succeeded'), child('mig-each-1', 'Running')];
    const next = fanOutPass({ task: 'mig', spec: s, status, children: kids, create: true, now });
    assert.deepEqual(made(next.actions), ['mig-each-2']);
  });

  it('five of six succeeded under atLeast 5: the step succeeds and the next one is due, items in its scope', () => {
    let status = inEach(s, items);
    status = {
      ...status,
      steps: status.steps?.map((r, i) =>
        i === 1 ? { ...r, forEach: { total: 6, created: 6, running: 0, succeeded: 0, failed: 0 } } : r,
      ),
    };
    const kids = Array.from({ length: 6 }, (_, i) => child(`mig-each-${i}`, i === 3 ? 'Failed' : 'Succeeded'));
    kids[1] = { ...kids[1], outputs: { result: 'ok' } };
    const pass = fanOutPass({ task: 'mig', spec: s, status, children: kids, create: true, now });
    assert.equal(pass.status.phase, 'Pending');
    assert.equal(pass.status.step?.name, 'sum');
    assert.equal(pass.status.steps?.[1]?.phase, 'Succeeded');
    const summary = JSON.parse(pass.status.steps?.[1]?.items ?? '[]');
    assert.equal(summary.length, 6);
    assert.deepEqual(summary[1], { index: 1, task: 'mig-each-1', phase: 'Succeeded', outputs: { result: 'ok' } });
    assert.equal(summary[3].phase, 'Failed');
  });

  it('output that is no JSON array fails the step, naming the reference', () => {
    const pass = fanOutPass({ task: 'mig', spec: s, status: inEach(s, 'not json'), children: [], create: true, now });
    assert.equal(pass.status.phase, 'Failed');
    assert.match(pass.status.message ?? '', /steps\.plan\.outputs\.items: not JSON/);
    const none = fanOutPass({ task: 'mig', spec: s, status: inEach(s), children: [], create: true, now });
    assert.match(none.status.message ?? '', /published no such output/);
  });

  it('while the controller stops nothing new is made', () => {
    const pass = fanOutPass({ task: 'mig', spec: s, status: inEach(s, items), children: [], create: false, now });
    assert.deepEqual(made(pass.actions), []);
  });

  it('a git workspace: each child on episodic/TASK/STEP-INDEX from the parent’s branch', () => {
    const g = spec({ items: ['a', 'b'] }, { workspace: { git: { url: 'https://example.com/r.git', ref: 'dev' } } });
    const pass = fanOutPass({ task: 'mig', spec: g, status: inEach(g), children: [], create: true, now });
    const tasks = pass.actions[0]?.type === 'CreateTasks' ? pass.actions[0].tasks : [];
    assert.deepEqual(
      tasks.map((t) => (t.spec.workspace as { git: { ref: string; from: string } }).git),
      [
        { url: 'https://example.com/r.git', ref: 'episodic/mig/each-0', from: 'dev' },
        { url: 'https://example.com/r.git', ref: 'episodic/mig/each-1', from: 'dev' },
      ],
    );
  });

  it("spec.integrate is inherited: each git child's branch enters the parent's queue; none without git", () => {
    const integrate = { into: 'main', queue: 'q' };
    const git = { workspace: { git: { url: 'https://example.com/r.git', ref: 'dev' } }, integrate };
    const g = spec({ items: ['a', 'b'] }, git);
    const pass = fanOutPass({ task: 'mig', spec: g, status: inEach(g), children: [], create: true, now });
    const tasks = pass.actions[0]?.type === 'CreateTasks' ? pass.actions[0].tasks : [];
    assert.equal(tasks.length, 2);
    for (const t of tasks) assert.deepEqual(t.spec.integrate, g.integrate);
  });

  it('a child name past 63 characters fails the step with the rule', () => {
    const long = 'x'.repeat(60);
    const pass = fanOutPass({ task: long, spec: s, status: inEach(s, items), children: [], create: true, now });
    assert.equal(pass.status.phase, 'Failed');
    assert.match(pass.status.message ?? '', /not an RFC 1123 label/);
  });
});

describe('item text is data', () => {
  it('placeholders in an item are not expanded in the child; an unknown item key renders empty', () => {
    assert.equal(renderItemPrompt('do {{item}} {{item.nope}}!', '{{bb.secret}} x', 0), 'do { {bb.secret}} x !');
    assert.equal(renderItemPrompt('{{ item.pkg }} {{task}}', { pkg: 'a{{task}}' }, 3), 'a{ {task}} {{task}}');
  });
  it('an item is bounded', () => {
    assert.ok(renderItemPrompt('{{item.pkg}}', { pkg: 'y'.repeat(10_000) }, 0).length <= 2000);
  });
});

describe('forEach in the spec', () => {
  const bad = (forEach: unknown, step: Record<string, unknown> = {}) => {
    const v = validateSpec({
      agent: { command: ['claude'] },
      steps: [{ name: 'each', prompt: 'x', forEach, ...step }],
    });
    return v.ok ? '' : JSON.stringify(v);
  };
  it('exactly one of items and fromOutput; a reference of the form steps.NAME.outputs.KEY; at most 256 items', () => {
    assert.match(bad({}), /exactly one of items or fromOutput/);
    assert.match(bad({ items: ['a'], fromOutput: 'steps.a.outputs.b' }), /exactly one of items or fromOutput/);
    assert.match(bad({ fromOutput: 'tasks.a.outputs.b' }), /steps\.NAME\.outputs\.KEY/);
    assert.match(bad({ items: Array.from({ length: 257 }, () => 'x') }), /257|256/);
    assert.match(bad({ items: ['a'] }, { prompt: undefined, promptFile: 'p.md' }), /needs prompt/);
    assert.equal(bad({ items: ['a'], failurePolicy: { atLeast: 1 } }), '');
  });
});
