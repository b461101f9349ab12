import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { gatewayCredentials } from '../../controller/api/agent-credentials.ts';
import {
  CREDENTIALS_CONFLICT,
  childrenAsWritten,
  chooseCredentials,
  credentialsConflictHold,
  credentialsUsed,
  defaultsConflict,
  spawnParentAsWritten,
  withCredentialsChosen,
} from '../../controller/reconciler/credentials-choice.ts';
import { planChild } from '../../controller/reconciler/spawn.ts';
import type { CredentialsChoice, NamespaceCredentials } from '../../controller/reconciler/credentials-choice.ts';
import { reconcile } from '../../controller/reconciler/reconcile.ts';
import { syncSteps } from '../../controller/reconciler/steps.ts';
import type { Action, ReconcileInput } from '../../controller/reconciler/reconcile.ts';

const plain: NamespaceCredentials = { name: 'plain', isDefault: false, where: 'plain.yaml' };
const team: NamespaceCredentials = { name: 'team', isDefault: true, where: 'team.yaml' };
const other: NamespaceCredentials = { name: 'other', isDefault: true, where: 'other.yaml' };
const conflict = defaultsConflict([plain, team, other]) as string;

const DEFAULTS: Record<string, NamespaceCredentials[]> = {
  zero: [plain],
  one: [plain, team],
  two: [plain, team, other],
};
const WRITTEN: Record<string, string | undefined> = { explicit: 'mine', none: 'none', absent: undefined };
// (the task's spec.agent.credentials) × (the namespace's defaults) → the choice.
const TABLE: Array<[keyof typeof WRITTEN, keyof typeof DEFAULTS, CredentialsChoice]> = [
  ['explicit', 'zero', { kind: 'use', name: 'mine', viaDefault: false }],
  ['explicit', 'one', { kind: 'use', name: 'mine', viaDefault: false }],
  ['explicit', 'two', { kind: 'use', name: 'mine', viaDefault: false }],
  ['none', 'zero', { kind: 'none', optedOut: true }],
  ['none', 'one', { kind: 'none', optedOut: true }],
  ['none', 'two', { kind: 'none', optedOut: true }],
  ['absent', 'zero', { kind: 'none', optedOut: false }],
  ['absent', 'one', { kind: 'use', name: 'team', viaDefault: true }],
  ['absent', 'two', { kind: 'conflict', message: conflict }],
];

const specWith = (credentials?: string) =>
  AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['agent'], ...(credentials ? { credentials } : {}) } });

describe('chooseCredentials: which AgentCredentials a task goes through', () => {
  for (const [written, defaults, want] of TABLE)
    it(`${written} name × ${defaults} defaults → ${want.kind}`, () => {
      assert.deepEqual(chooseCredentials(WRITTEN[written], DEFAULTS[defaults]), want);
    });

  it('names both defaults in the conflict, in the same order whatever order they were listed in', () => {
    assert.match(conflict, /2 AgentCredentials are the namespace default .*other\.yaml and team\.yaml/);
    assert.equal(defaultsConflict([other, team, plain]), conflict);
    assert.equal(defaultsConflict([plain, team]), undefined);
  });

  it('the spec the executors read holds the choice: the default filled in, "none" kept, a conflict leaves none', () => {
    const task = { key: 'ns/t', spec: specWith() };
    assert.equal(withCredentialsChosen(task, [team]).task.spec?.agent.credentials, 'team');
    assert.equal(withCredentialsChosen(task, [team, other]).task.spec?.agent.credentials, undefined);
    // "none" stays as written: what the task creates inherits the opt-out; gatewayCredentials reads it as none.
    const optedOut = withCredentialsChosen({ key: 'ns/t', spec: specWith('none') }, [team]);
    assert.equal(optedOut.task.spec?.agent.credentials, 'none');
    assert.equal(gatewayCredentials(optedOut.task.spec as ReturnType<typeof specWith>), undefined);
    const unchanged = { key: 'ns/t', spec: specWith('mine') };
    assert.equal(withCredentialsChosen(unchanged, [team]).task, unchanged);
  });

  it('status says which credentials an episode used and whether the default chose them', () => {
    const byDefault: CredentialsChoice = { kind: 'use', name: 'team', viaDefault: true };
    assert.deepEqual(credentialsUsed('team', byDefault), { name: 'team', namespaceDefault: true });
    // A step naming its own credentials: not the default's doing.
    assert.deepEqual(credentialsUsed('step-own', byDefault), { name: 'step-own' });
    assert.equal(credentialsUsed(undefined, byDefault), undefined);
  });

  it('children created by a task that relied on the default take it as written (absent), an explicit name stays', () => {
    const child = (credentials?: string) => ({
      name: 'c',
      labels: {},
      spec: { prompt: 'p', agent: { command: ['a'], ...(credentials ? { credentials } : {}) } },
    });
    const create = (credentials?: string): Action[] => [{ type: 'CreateTasks', tasks: [child(credentials)] }];
    const agentOf = (actions: Action[]) => (actions[0] as Extract<Action, { type: 'CreateTasks' }>).tasks[0].spec.agent;
    const byDefault: CredentialsChoice = { kind: 'use', name: 'team', viaDefault: true };
    assert.deepEqual(agentOf(childrenAsWritten(create('team'), byDefault)), { command: ['a'] });
    // A step's own name for the child, another than the default: kept.
    assert.deepEqual(agentOf(childrenAsWritten(create('mine'), byDefault)), { command: ['a'], credentials: 'mine' });
    const named: CredentialsChoice = { kind: 'use', name: 'team', viaDefault: false };
    assert.deepEqual(agentOf(childrenAsWritten(create('team'), named)), { command: ['a'], credentials: 'team' });
  });

  it('spawn ops of a task on the default: their children are planned from the task as written', () => {
    const spawn = { op: 'spawn' as const, name: 'kid', prompt: 'p' };
    const apply = (ops: Extract<Action, { type: 'ApplyOps' }>['ops']): Action[] => [
      { type: 'ApplyOps', episode: 1, ops },
    ];
    const byDefault: CredentialsChoice = { kind: 'use', name: 'team', viaDefault: true };
    const named: CredentialsChoice = { kind: 'use', name: 'team', viaDefault: false };
    assert.deepEqual(childrenAsWritten(apply([spawn]), byDefault), [
      { type: 'ApplyOps', episode: 1, ops: [spawn], credentialsDefault: 'team' },
    ]);
    const board = apply([{ op: 'set', key: 'k', value: 'v' }]);
    assert.deepEqual(childrenAsWritten(board, byDefault), board, 'no spawn: nothing to say');
    assert.deepEqual(childrenAsWritten(apply([spawn]), named), apply([spawn]), 'named: the name is written');
    const chosen = withCredentialsChosen({ name: 'p', spec: specWith() }, [team]).task;
    const agentOfChild = (parent: typeof chosen) => {
      const plan = planChild({ name: 'p', spec: parent.spec as NonNullable<typeof parent.spec>, children: [] }, spawn);
      assert.ok(plan.ok);
      return plan.spec.agent as { credentials?: string };
    };
    assert.equal(agentOfChild(chosen).credentials, 'team', 'without the rule the default is written in by name');
    assert.equal(agentOfChild(spawnParentAsWritten(chosen, 'team')).credentials, undefined);
    assert.equal(spawnParentAsWritten(chosen, undefined), chosen);
  });

  it('a conflict holds the task Waiting, warned once', () => {
    const choice: CredentialsChoice = { kind: 'conflict', message: conflict };
    const first = credentialsConflictHold(emptyStatus(), choice);
    assert.equal(first?.status.phase, 'Waiting');
    assert.equal(first?.status.reason, CREDENTIALS_CONFLICT);
    assert.deepEqual(
      first?.events.map((e) => e.reason),
      [CREDENTIALS_CONFLICT],
    );
    assert.deepEqual(credentialsConflictHold(first?.status ?? emptyStatus(), choice)?.events, []);
    assert.equal(credentialsConflictHold(emptyStatus(), { kind: 'none', optedOut: false }), undefined);
  });
});

describe('reconcile with the credentials chosen', () => {
  const input = (spec: ReturnType<typeof specWith>, credentials: CredentialsChoice): ReconcileInput => ({
    namespace: 'ns',
    name: 't',
    generation: 1,
    spec,
    deleted: false,
    status: emptyStatus(),
    dependencies: {},
    freeSlots: 1,
    credentials,
    now: new Date('2026-06-01T12:00:00Z'),
    jitter: 0,
  });

  it('starts the episode behind the gateway (a leash) and records the default in status', () => {
    const chosen = withCredentialsChosen({ spec: specWith() }, [team]);
    const out = reconcile(input(chosen.task.spec as ReturnType<typeof specWith>, chosen.choice as CredentialsChoice));
    const start = out.actions.find((a) => a.type === 'StartEpisode');
    assert.ok(start && 'leash' in start && start.leash, 'a gateway episode carries its leash');
    assert.deepEqual(out.status.credentials, { name: 'team', namespaceDefault: true });
  });

  it("a step naming the default's own credentials chose them: status does not say the default did", () => {
    const raw = { agent: { command: ['agent'] } };
    const steps = [{ name: 'own', prompt: 'p', agent: { credentials: 'team' } }];
    const chosen = withCredentialsChosen({ spec: AgentTaskSpecSchema.parse({ ...raw, steps }) }, [team]);
    const out = reconcile(input(chosen.task.spec as ReturnType<typeof specWith>, chosen.choice as CredentialsChoice));
    assert.ok(out.actions.some((a) => a.type === 'StartEpisode'));
    assert.deepEqual(out.status.credentials, { name: 'team' });
  });

  it('two defaults: no episode starts, the message names both', () => {
    const out = reconcile(input(specWith(), { kind: 'conflict', message: conflict }));
    assert.equal(
      out.actions.some((a) => a.type === 'StartEpisode'),
      false,
    );
    assert.equal(out.status.reason, CREDENTIALS_CONFLICT);
    assert.match(out.status.message ?? '', /other\.yaml and team\.yaml/);
  });

  it("a forEach step's children of a task on the default are created without a name: each resolves the default", () => {
    const raw = {
      agent: { command: ['agent'] },
      steps: [{ name: 'each', prompt: 'do {{item}}', forEach: { items: ['a', 'b'], maxConcurrency: 2 } }],
    };
    const chosen = withCredentialsChosen({ spec: AgentTaskSpecSchema.parse(raw) }, [team]);
    const spec = chosen.task.spec as ReturnType<typeof specWith>;
    const status = syncSteps(emptyStatus(), spec, 1).status;
    const spawn = { children: [], waiting: [] };
    const out = reconcile({ ...input(spec, chosen.choice as CredentialsChoice), status, spawn });
    const created = out.actions.flatMap((a) => (a.type === 'CreateTasks' ? a.tasks : []));
    assert.equal(created.length, 2, JSON.stringify(out.status));
    for (const c of created) assert.ok(!('credentials' in (c.spec.agent as object)), JSON.stringify(c.spec.agent));
    // Opted out: the children inherit "none", so they do not pick up the default either.
    const none = withCredentialsChosen(
      { spec: AgentTaskSpecSchema.parse({ ...raw, agent: { command: ['agent'], credentials: 'none' } }) },
      [team],
    );
    const noneOut = reconcile({
      ...input(none.task.spec as ReturnType<typeof specWith>, none.choice as CredentialsChoice),
      status,
      spawn,
    });
    const noneMade = noneOut.actions.flatMap((a) => (a.type === 'CreateTasks' ? a.tasks : []));
    assert.equal(noneMade.length, 2);
    for (const c of noneMade) assert.equal((c.spec.agent as { credentials?: string }).credentials, 'none');
  });

  it('opted out: an episode without the gateway, no credentials in status', () => {
    const chosen = withCredentialsChosen({ spec: specWith('none') }, [team]);
    const out = reconcile(input(chosen.task.spec as ReturnType<typeof specWith>, chosen.choice as CredentialsChoice));
    const start = out.actions.find((a) => a.type === 'StartEpisode');
    assert.ok(start && !('leash' in start));
    assert.equal(out.status.credentials, undefined);
  });
});
