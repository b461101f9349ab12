// Issue 28, against the real Gitea: the tokens people use. A personal token's own issues, labels and
// `/episodic` comments trigger (loop prevention is the report marker, not the person), and what matches
// nothing is counted by reason in status. A write collaborator's token cannot read another user's
// permission: that item (and a resume) waits, said in status, while every other item moves; an admin's
// token then lets it go. A re-run edits the item's one report comment instead of posting a second. The
// runner passes with an injected clock; tasks go to the real local created-tasks store.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { type AgentTaskStatus, emptyStatus } from '../../controller/api/agent-task-status.ts';
import { AgentTriggerSpecSchema } from '../../controller/api/agent-trigger.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { LocalTriggerStatus } from '../../controller/sources/triggers/local-triggers.ts';
import type { ResumeRequest } from '../../controller/reconciler/trigger-resume.ts';
import { TriggerRunner } from '../../controller/sources/triggers/trigger-runner.ts';
import { type Gitea, type GiteaAccount, startGitea } from '../support/gitea.ts';
import { tempDir } from '../support/local.ts';

/** A runner on one trigger whose token is `token`; task phases are set by the test (the tasks never run). */
function setUp(gitea: Gitea, name: string, repo: string, token: string) {
  const stateDir = join(tempDir(), '.episodic');
  const created = new LocalCreatedTasks({ stateDir });
  const store = new LocalTriggerStatus(stateDir);
  const phases = new Map<string, AgentTaskStatus>();
  const resumed: Array<{ task: string; request: ResumeRequest }> = [];
  const runner = new TriggerRunner({
    created,
    finished: (_ns, task) => ['Succeeded', 'NeedsReview'].includes(phases.get(task)?.phase ?? ''),
    status: store,
    clock: new ManualClock(new Date('2026-12-01T00:00:00Z')),
    secret: async () => token,
    taskStatus: (_ns, task) => phases.get(task),
    requestResume: (_ns, task, request) => void resumed.push({ task, request }),
    logger: pino({ level: 'silent' }),
  });
  const spec = AgentTriggerSpecSchema.parse({
    source: {
      gitea: {
        apiURL: gitea.url,
        repo,
        labels: ['agent'],
        command: { text: '/episodic', minPermission: 'write' },
        tokenEnv: 'T',
      },
    },
    report: { comment: true },
    maxConcurrency: 10,
    template: { spec: { prompt: 'Fix #{{item.number}}', agent: { command: ['agent'] } } },
  });
  const owner = { kind: 'AgentTrigger' as const, namespace: 'default', name };
  const trigger = { key: `default/${name}`, namespace: 'default', name, spec, owner };
  return {
    pass: () => runner.pass(trigger),
    tasks: async () => (await created.list(owner)).map((t) => t.name).sort(),
    status: () => store.read(trigger.key),
    phase: (task: string, phase: AgentTaskStatus['phase']) => phases.set(task, { ...emptyStatus(), phase }),
    resumed,
  };
}

describe('trigger tokens (real Gitea)', () => {
  let gitea: Gitea;
  let alice: GiteaAccount;
  let bob: GiteaAccount;
  let carol: GiteaAccount;

  before(async () => {
    gitea = await startGitea();
    [alice, bob, carol] = await Promise.all(['alice', 'bob', 'carol'].map((u) => gitea.createUser(u)));
  });
  after(async () => {
    await gitea?.stop();
  });

  it("a personal token: its own user's issues, labels and /episodic comments trigger; misses are counted", async () => {
    await gitea.createRepo(alice.name, 'own');
    const label = await gitea.createLabel(alice.name, 'own', 'agent');
    const t = setUp(gitea, 'own', `${alice.name}/own`, alice.token);
    const issue = (title: string, labels: number[] = []) =>
      gitea.createIssue(alice.name, 'own', { title, labels }, alice.token);
    await issue('filed with the label', [label.id]);
    const later = await issue('labelled after filing');
    await gitea.api('POST', `/repos/${alice.name}/own/issues/${later.number}/labels`, {
      body: { labels: [label.id] },
      token: alice.token,
    });
    const asked = await issue('asked by a comment');
    await gitea.comment(alice.name, 'own', asked.number, '/episodic please', alice.token);
    await issue('neither');
    await t.pass();
    assert.equal(t.status()?.lastError, undefined);
    assert.deepEqual(await t.tasks(), ['own-1', 'own-2', 'own-3']);
    assert.deepEqual(t.status()?.itemsSkipped, { labelsMissing: 1 }, 'the issue that matched nothing, and why');
    // The reports were written with alice's token: seen again, they are her comments but no command.
    const reports = await gitea.listComments(alice.name, 'own', asked.number);
    assert.ok(reports.some((c) => c.user.login === alice.name && c.body.startsWith('<!-- episodic:report own/own-3')));
    await t.pass();
    assert.deepEqual(await t.tasks(), ['own-1', 'own-2', 'own-3'], 'no loop on its own reports');
    assert.equal(t.status()?.tasksCreated, 3);
    assert.ok((t.status()?.itemsSkipped?.taskExists ?? 0) >= 3, JSON.stringify(t.status()?.itemsSkipped));
  });

  it("a write collaborator's token: the item whose commenter it cannot read waits (status says why), the rest move", async () => {
    const owner = alice.name;
    await gitea.createRepo(owner, 'bot');
    await gitea.addCollaborator(owner, 'bot', bob.name, 'write');
    await gitea.addCollaborator(owner, 'bot', carol.name, 'write');
    const label = await gitea.createLabel(owner, 'bot', 'agent');
    const t = setUp(gitea, 'bot', `${owner}/bot`, bob.token);
    const byCarol = await gitea.createIssue(owner, 'bot', { title: 'carol asks' }, carol.token);
    await gitea.comment(owner, 'bot', byCarol.number, '/episodic', carol.token);
    const byBob = await gitea.createIssue(owner, 'bot', { title: 'bob asks' }, bob.token);
    await gitea.comment(owner, 'bot', byBob.number, '/episodic', bob.token);
    const labelled = await gitea.createIssue(owner, 'bot', { title: 'labelled', labels: [label.id] }, carol.token);
    await t.pass();
    assert.equal(t.status()?.lastError, undefined, 'the pass did not fail');
    assert.deepEqual(await t.tasks(), [`bot-${byBob.number}`, `bot-${labelled.number}`]);
    const waiting = t.status()?.itemsUndecided ?? [];
    assert.deepEqual(
      waiting.map((w) => w.number),
      [byCarol.number],
    );
    assert.match(waiting[0]?.reason ?? '', /carol's permission: .*needs a token of a repo admin/);

    // A resume command from carol on a task that needs review: it waits too, and the pass still goes on.
    t.phase(`bot-${labelled.number}`, 'NeedsReview');
    await gitea.comment(owner, 'bot', labelled.number, '/episodic resume', carol.token);
    await t.pass();
    assert.equal(t.status()?.lastError, undefined);
    assert.equal(t.resumed.length, 0, 'not resumed yet');
    assert.deepEqual(
      (t.status()?.itemsUndecided ?? []).map((w) => w.number).sort(),
      [byCarol.number, labelled.number].sort(),
    );

    // With admin rights the token reads carol's role: her command and her resume go through.
    await gitea.addCollaborator(owner, 'bot', bob.name, 'admin');
    await t.pass();
    assert.equal(t.status()?.itemsUndecided, undefined);
    assert.ok((await t.tasks()).includes(`bot-${byCarol.number}`));
    assert.deepEqual(
      t.resumed.map((r) => [r.task, r.request.by]),
      [[`bot-${labelled.number}`, 'gitea:carol']],
    );
  });

  it("a newer /episodic on a finished item re-runs it and edits the item's one report comment", async () => {
    const owner = alice.name;
    await gitea.createRepo(owner, 'again');
    await gitea.addCollaborator(owner, 'again', carol.name, 'write');
    const label = await gitea.createLabel(owner, 'again', 'agent');
    const t = setUp(gitea, 'rr', `${owner}/again`, alice.token);
    const issue = await gitea.createIssue(owner, 'again', { title: 'twice', labels: [label.id] }, carol.token);
    const reports = async () =>
      (await gitea.listComments(owner, 'again', issue.number)).filter((c) => c.body.includes('episodic:report'));
    await t.pass();
    t.phase('rr-1', 'Succeeded');
    await t.pass();
    const first = await reports();
    assert.equal(first.length, 1);
    assert.match(first[0]?.body ?? '', /task `rr-1`: \*\*Succeeded\*\*/);

    await gitea.comment(owner, 'again', issue.number, '/episodic once more', carol.token);
    await t.pass();
    assert.deepEqual(await t.tasks(), ['rr-1', 'rr-1-2']);
    const now = await reports();
    assert.deepEqual(
      now.map((c) => c.id),
      [first[0]?.id],
      'the same comment, edited',
    );
    assert.match(now[0]?.body ?? '', /task `rr-1-2`: \*\*Pending\*\*/);
    t.phase('rr-1-2', 'Succeeded');
    await t.pass();
    const last = await reports();
    assert.equal(last.length, 1);
    assert.match(last[0]?.body ?? '', /task `rr-1-2`: \*\*Succeeded\*\*/);
  });
});
