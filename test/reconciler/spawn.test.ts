// Tables for the pure rules of spawn and send: the child a spawn op makes (or why not), a parent's wait for
// its children, {{children}}, {{messages}}, delivery and acknowledgement, wake and interrupt.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AgentTaskSpec } from '../../controller/api/agent-task.ts';
import type { OpOf } from '../../controller/api/ops.ts';
import { validateSpec } from '../../controller/api/validate.ts';
import type { Message } from '../../controller/api/spawn-fields.ts';
import { CHILDREN_TEXT_MAX, renderChildren, waitForChildren } from '../../controller/reconciler/children.ts';
import type { ChildView } from '../../controller/reconciler/children.ts';
import { deliver, renderMessages, toAcknowledge, wakeDecision } from '../../controller/reconciler/mail.ts';
import type { WakeFacts } from '../../controller/reconciler/mail.ts';
import { planChild } from '../../controller/reconciler/spawn.ts';
import type { SpawnParent } from '../../controller/reconciler/spawn.ts';

function spec(over: Record<string, unknown> = {}): AgentTaskSpec {
  const v = validateSpec({
    prompt: 'plan',
    agent: { command: ['claude', '-p'], env: [{ name: 'A', value: '1' }] },
    workspace: 'ws/planner',
    limits: { maxEpisodes: 5, maxCostUSD: 2, episodeTimeoutSeconds: 600 },
    ...over,
  });
  assert.ok(v.ok, JSON.stringify(v));
  return v.spec;
}

const parent = (over: Partial<SpawnParent> = {}): SpawnParent => ({
  name: 'planner',
  spec: spec(),
  labels: { team: 'web', 'episodic.dev/parent': 'grandpa', 'episodic.dev/depth': '1' },
  children: [],
  ...over,
});
const spawn = (over: Partial<OpOf<'spawn'>> = {}): OpOf<'spawn'> => ({
  op: 'spawn',
  name: 'a',
  prompt: 'do a',
  ...over,
});

describe('spawn: the child a spawn op makes', () => {
  it('is PARENT-NAME with the parent’s agent, workspace, limits and budget labels, one level deeper', () => {
    const plan = planChild(parent(), spawn());
    assert.ok(plan.ok);
    assert.equal(plan.name, 'planner-a');
    assert.equal(plan.existing, false);
    assert.equal(plan.spec.prompt, 'do a');
    assert.deepEqual((plan.spec.agent as AgentTaskSpec['agent']).command, ['claude', '-p']);
    assert.equal(plan.spec.workspace, 'ws/planner');
    const limits = plan.spec.limits as Record<string, number>;
    assert.equal(limits.maxEpisodes, 5);
    assert.equal(limits.maxCostUSD, 2);
    assert.equal(limits.maxChildren, 10, 'maxChildren defaults to 10');
    assert.deepEqual(plan.labels, { team: 'web', 'episodic.dev/parent': 'planner', 'episodic.dev/depth': '2' });
    assert.ok(validateSpec(plan.spec).ok, 'the child spec validates');
  });

  const refused: Array<[string, Partial<SpawnParent>, Partial<OpOf<'spawn'>>, RegExp]> = [
    ['a limit above the parent’s', {}, { limits: { maxCostUSD: 100 } }, /maxCostUSD 100 is above the parent's 2/],
    ['more episodes than the parent', {}, { limits: { maxEpisodes: 6 } }, /maxEpisodes 6 is above/],
    ['more children than the parent may have', {}, { limits: { maxChildren: 11 } }, /maxChildren 11 is above/],
    ['past maxChildren', { children: Array.from({ length: 10 }, (_, i) => `planner-c${i}`) }, {}, /maxChildren 10/],
    [
      'past the parent’s own maxChildren',
      { spec: spec({ limits: { maxChildren: 1 } }), children: ['planner-x'] },
      {},
      /maxChildren 1 reached/,
    ],
    ['depth past 3', { labels: { 'episodic.dev/depth': '3' } }, {}, /depth 4 is past 3/],
    ['a name too long together', { name: 'p'.repeat(40) }, { name: 'n'.repeat(30) }, /not an RFC 1123 label/],
    ['a workspace leading out', {}, { workspace: '../other' }, /leads out of the parent's workspace/],
    ['an absolute workspace', {}, { workspace: '/etc' }, /leads out/],
    [
      'a sub-workspace of a git workspace',
      { spec: spec({ workspace: { git: { url: 'https://x/y.git' } } }) },
      { workspace: 'sub' },
      /directory workspace/,
    ],
    ['a label of the controller', {}, { labels: { 'episodic.dev/parent': 'someone-else' } }, /is the controller's/],
    ['a label that is not one', {}, { labels: { 'bad key!': 'x' } }, /not a valid label/],
  ];
  for (const [what, p, op, why] of refused) {
    it(`refuses ${what}`, () => {
      const plan = planChild(parent(p), spawn(op));
      assert.equal(plan.ok, false);
      assert.match(plan.ok ? '' : plan.message, why);
    });
  }

  it('lowers limits, takes a sub-workspace, a command and env, and the op’s labels', () => {
    const op = spawn({
      name: 'b',
      limits: { maxCostUSD: 0.5, maxChildren: 0 },
      workspace: 'sub/b',
      agent: { command: ['codex', 'exec'], env: [{ name: 'A', value: '2' }] },
      labels: { role: 'worker' },
    });
    const plan = planChild(parent(), op);
    assert.ok(plan.ok);
    const limits = plan.spec.limits as Record<string, number>;
    assert.equal(limits.maxCostUSD, 0.5);
    assert.equal(limits.maxChildren, 0);
    assert.equal(plan.spec.workspace, 'ws/planner/sub/b');
    const agent = plan.spec.agent as AgentTaskSpec['agent'];
    assert.deepEqual(agent.command, ['codex', 'exec']);
    assert.deepEqual(agent.env, [{ name: 'A', value: '2' }]);
    assert.equal(plan.labels.role, 'worker');
  });

  it('spawning an existing child again is that child, also at maxChildren', () => {
    const plan = planChild(parent({ spec: spec({ limits: { maxChildren: 1 } }), children: ['planner-a'] }), spawn());
    assert.ok(plan.ok);
    assert.equal(plan.existing, true);
  });

  it('a stack instead of a prompt', () => {
    const plan = planChild(parent(), spawn({ prompt: undefined, stack: ['first', 'second'] }));
    assert.ok(plan.ok);
    assert.deepEqual(plan.spec.stack, ['first', 'second']);
    assert.equal(plan.spec.prompt, undefined);
  });
});

const child = (name: string, phase?: ChildView['phase'], over: Partial<ChildView> = {}): ChildView => ({
  name,
  phase,
  costUSD: 0,
  ...over,
});

describe('spawn: the parent and its children', () => {
  const cases: Array<[string, boolean | undefined, ChildView[], string | undefined]> = [
    ['no children', true, [], undefined],
    [
      'one still running',
      true,
      [child('p-a', 'Succeeded'), child('p-b', 'Running')],
      'waiting for 1 of 2 children: p-b',
    ],
    ['one not reconciled yet', undefined, [child('p-a')], 'waiting for 1 of 1 children: p-a'],
    ['a waiting child is not terminal', true, [child('p-a', 'Waiting')], 'waiting for 1 of 1 children: p-a'],
    [
      'all terminal (any way)',
      true,
      [child('p-a', 'Succeeded'), child('p-b', 'Failed'), child('p-c', 'NeedsReview')],
      undefined,
    ],
    ['awaitChildren: false', false, [child('p-a', 'Running')], undefined],
  ];
  for (const [what, awaitChildren, children, message] of cases) {
    it(`waits: ${what}`, () => {
      const w = waitForChildren({ awaitChildren }, children);
      assert.equal(w?.message, message);
      if (w) assert.deepEqual([w.phase, w.reason], ['Waiting', 'WaitingForChildren']);
    });
  }

  it('{{children}}: name order, phase, outputs and last message, cut to bounds', () => {
    const text = renderChildren([
      child('p-b', 'Failed', { lastMessage: 'tests fail' }),
      child('p-a', 'Succeeded', { outputs: { pr: 'https://x/pr/1' }, lastMessage: 'done' }),
      child('p-c'),
    ]);
    assert.equal(
      text,
      '- p-a: Succeeded\n  output pr: https://x/pr/1\n  last message: done\n- p-b: Failed\n  last message: tests fail\n- p-c: Pending',
    );
    const many = Array.from({ length: 40 }, (_, i) => child(`p-${i}`, 'Succeeded', { lastMessage: 'x'.repeat(600) }));
    const cut = renderChildren(many);
    assert.ok(cut.length <= CHILDREN_TEXT_MAX + 100, String(cut.length));
    assert.match(cut, /\(\d+ more children not shown\)$/);
    assert.ok(cut.includes(`${'x'.repeat(499)}…`), 'a last message is cut to 500 characters');
  });
});

const m = (id: string, at: string, from = 'alice'): Message => ({ id, from, at, text: `text ${id}` });

describe('send: messages, delivery and acknowledgement', () => {
  it('{{messages}} oldest first with sender', () => {
    assert.equal(
      renderMessages([m('a.1.0', '2026-11-25T10:00:00Z'), m('b.1.0', '2026-11-25T10:01:00Z', 'bob')]),
      'from alice at 2026-11-25T10:00:00Z:\ntext a.1.0\n\nfrom bob at 2026-11-25T10:01:00Z:\ntext b.1.0',
    );
  });

  it('an episode gets what the last did not, and its delivery is acknowledged once it has ended', () => {
    const waiting = [m('a.1.0', 't1'), m('a.1.1', 't2')];
    const first = deliver(waiting, undefined, 3);
    assert.deepEqual(first.mailbox, { episode: 3, delivered: ['a.1.0', 'a.1.1'] });
    assert.deepEqual(toAcknowledge(first.mailbox, 3), [], 'not while episode 3 runs');
    assert.deepEqual(toAcknowledge(first.mailbox, undefined), ['a.1.0', 'a.1.1'], 'once it has ended');
    // Killed after episode 3 ended, before the ack: the next episode gets only the new message.
    const next = deliver([...waiting, m('c.2.0', 't3')], first.mailbox, 4);
    assert.deepEqual(next.mailbox, { episode: 4, delivered: ['c.2.0'] });
    assert.deepEqual(deliver([], undefined, 5), { messages: [], mailbox: undefined });
  });
});

describe('wake and interrupt', () => {
  const facts = (over: Partial<WakeFacts>): WakeFacts => ({
    wake: 'grind',
    interrupt: false,
    episodes: 1,
    waiting: [],
    ...over,
  });
  const table: Array<[string, Partial<WakeFacts>, string]> = [
    ['grind: the next episode at once', {}, 'go'],
    ['onMessage, no message: waits', { wake: 'onMessage' }, 'await'],
    ['onMessage, a message: goes', { wake: 'onMessage', waiting: [m('a.1.0', 't')] }, 'go'],
    ['onMessage, the first episode never waits', { wake: 'onMessage', episodes: 0 }, 'go'],
    [
      'onMessage, only messages already delivered (ack pending): waits',
      { wake: 'onMessage', waiting: [m('a.1.0', 't')], mailbox: { episode: 1, delivered: ['a.1.0'] } },
      'await',
    ],
    ['running, interrupt off: goes on', { running: 2, waiting: [m('a.1.0', 't')] }, 'go'],
    [
      'running, interrupt, a new message: interrupts',
      { running: 2, interrupt: true, waiting: [m('a.1.0', 't')] },
      'interrupt',
    ],
    [
      'running, interrupt, only messages it got: goes on',
      { running: 2, interrupt: true, waiting: [m('a.1.0', 't')], mailbox: { episode: 2, delivered: ['a.1.0'] } },
      'go',
    ],
    ['running, interrupt, no message: goes on', { running: 2, interrupt: true }, 'go'],
  ];
  for (const [what, over, kind] of table) {
    it(what, () => {
      const d = wakeDecision(facts(over));
      assert.equal(d.kind, kind);
      if (d.kind === 'await') assert.deepEqual([d.phase, d.reason], ['Waiting', 'AwaitingMessage']);
      if (d.kind === 'interrupt') assert.equal(d.number, 2);
    });
  }
});
