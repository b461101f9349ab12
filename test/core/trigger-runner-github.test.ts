// source.github served: the trigger runner polls the GitHub stand-in (GitHub's documented shapes, every
// request recorded) through GitHubForge. A labelled issue → one task whose git workspace pushes to
// episodic/1; an idle poll is one request answered 304; the report comment is created once and edited as
// the task moves; on Succeeded one PR with `Closes #1`, recorded in status.pullRequests; a restarted runner
// posts nothing twice; a command from a user without permission creates nothing.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import type { AgentTaskStatus } from '../../controller/api/agent-task-status.ts';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import { AgentTriggerSpecSchema } from '../../controller/api/agent-trigger.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { LocalTriggerStatus } from '../../controller/sources/triggers/local-triggers.ts';
import { TriggerRunner } from '../../controller/sources/triggers/trigger-runner.ts';
import { GitHubStandin } from '../support/github-standin.ts';
import { tempDir } from '../support/local.ts';

const TOKEN = 'ghp_triggerRunnerStandin0123456789';
const REPO = 'octo/widgets';

describe('a GitHub trigger against the stand-in', () => {
  let gh: GitHubStandin;
  const stateDir = join(tempDir(), '.episodic');
  const created = new LocalCreatedTasks({ stateDir });
  const status = new LocalTriggerStatus(stateDir);
  const clock = new ManualClock(new Date('2026-11-25T10:00:00Z'));
  const phases = new Map<string, AgentTaskStatus>();
  const runner = () =>
    new TriggerRunner({
      created,
      finished: (_ns, name) => phases.get(name)?.phase === 'Succeeded',
      taskStatus: (_ns, name) => phases.get(name),
      status,
      clock,
      secret: async () => TOKEN,
      logger: pino({ level: 'silent' }),
    });
  let trigger: Parameters<TriggerRunner['pass']>[0];
  const writes = () => gh.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.url}`);
  const reportsOn = (n: number) => gh.comments.filter((c) => c.issue === n && c.user === 'episodic-bot');

  before(async () => {
    gh = await new GitHubStandin({ token: TOKEN, login: 'episodic-bot', repo: REPO }).start();
    gh.permissions = {
      alice: { permission: 'write', role_name: 'write' },
      reader: { permission: 'read', role_name: 'read' },
    };
    const spec = AgentTriggerSpecSchema.parse({
      source: {
        github: {
          apiURL: gh.url,
          repo: REPO,
          labels: ['agent'],
          command: { text: '/episodic', minPermission: 'write' },
          tokenEnv: 'GH_TOKEN',
        },
      },
      report: { comment: true, labels: { running: 'episodic:running', done: 'episodic:done' }, pullRequest: {} },
      maxConcurrency: 5,
      template: {
        spec: {
          prompt: 'Fix #{{item.number}}: {{item.title}}',
          agent: { command: ['agent'] },
          workspace: { git: { url: 'https://github.com/octo/widgets.git', ref: 'main' } },
        },
      },
    });
    const owner = { kind: 'AgentTrigger' as const, namespace: 'default', name: 'fix' };
    trigger = { key: 'default/fix', namespace: 'default', name: 'fix', spec, owner };
  });
  after(async () => {
    await gh?.stop();
  });

  it('a labelled issue → one task on episodic/1; its report; an idle poll is one request answered 304', async () => {
    gh.addIssue({ title: 'Widget is broken', user: 'alice', labels: ['agent'] });
    gh.addIssue({ title: 'Unlabelled', user: 'alice' });
    const run = runner();
    await run.pass(trigger);
    const tasks = await created.list(trigger.owner);
    assert.deepEqual(
      tasks.map((t) => t.name),
      ['fix-1'],
    );
    assert.deepEqual(tasks[0].spec.workspace, {
      git: { url: 'https://github.com/octo/widgets.git', ref: 'episodic/1' },
    });
    assert.equal(reportsOn(1).length, 1);
    assert.match(
      reportsOn(1)[0].body,
      /^<!-- episodic:report fix\/fix-1 -->\n\*\*episodic\*\* task `fix-1`: \*\*Pending\*\*/,
    );
    assert.deepEqual(gh.issues[0].labels, ['agent', 'episodic:running']);
    // The report bumped the issue: the next poll reads it (200), nothing new comes of it.
    await run.pass(trigger);
    gh.requests.length = 0;
    clock.advance(60_000);
    await run.pass(trigger);
    assert.deepEqual(
      gh.requests.map((r) => [r.method, r.url.split('?')[0], r.status]),
      [['GET', `/repos/${REPO}/issues`, 304]],
    );
    assert.ok(gh.requests[0].ifNoneMatch, 'conditional on the last ETag');
    const s = status.read('default/fix');
    assert.equal(s?.tasksCreated, 1);
    assert.equal(s?.lastError, undefined);
  });

  it('the comment follows the task; on Succeeded one PR closing the issue; a restart posts nothing twice', async () => {
    const run = runner();
    phases.set('fix-1', { ...emptyStatus(), phase: 'Running', episodes: 1 });
    await run.pass(trigger);
    assert.match(reportsOn(1)[0].body, /\*\*Running\*\*/);
    phases.set('fix-1', { ...emptyStatus(), phase: 'Succeeded', episodes: 2, costUSD: 0.5, workspaceChanges: 1 });
    gh.requests.length = 0;
    await run.pass(trigger);
    assert.equal(reportsOn(1).length, 1, 'one comment, edited in place');
    assert.match(reportsOn(1)[0].body, /\*\*Succeeded\*\*/);
    const pulls = gh.issues.filter((i) => i.pull);
    assert.equal(pulls.length, 1);
    assert.deepEqual(pulls[0].pull, { head: 'episodic/1', base: 'main', draft: false });
    assert.equal(pulls[0].title, 'Widget is broken');
    assert.match(pulls[0].body ?? '', /Closes #1$/);
    assert.deepEqual(gh.issues[0].labels, ['agent', 'episodic:done']);
    assert.ok(writes().includes(`POST /repos/${REPO}/pulls`));
    assert.deepEqual(status.read('default/fix')?.pullRequests, {
      'fix-1': { number: pulls[0].number, url: `https://github.com/${REPO}/pull/${pulls[0].number}` },
    });

    gh.requests.length = 0;
    const restarted = runner();
    clock.advance(60_000);
    await restarted.pass(trigger);
    await restarted.reportPass(trigger);
    assert.deepEqual(writes(), [], 'nothing posted, edited or opened again');
    assert.equal(gh.issues.filter((i) => i.pull).length, 1);
  });

  it('a command from a reader creates nothing; from a writer, the next task of the item', async () => {
    const run = runner();
    gh.addComment(1, 'reader', '/episodic again');
    await run.pass(trigger);
    assert.deepEqual(
      (await created.list(trigger.owner)).map((t) => t.name),
      ['fix-1'],
    );
    gh.addComment(1, 'alice', '/episodic again please');
    clock.advance(60_000);
    await run.pass(trigger);
    assert.deepEqual((await created.list(trigger.owner)).map((t) => t.name).sort(), ['fix-1', 'fix-1-2']);
    assert.ok(!JSON.stringify(status.read('default/fix')).includes(TOKEN), 'the token is not in status');
  });
});
