// spec.report on a `source.webhook` trigger, locally against the real Gitea through `episodic run --watch`:
// Gitea's own signed delivery for a labelled issue → one task on branch episodic/1 → a stand-in agent that
// changes a file → the report comment on the issue edited from Running to Succeeded, and one PR closing the
// issue — the same reports a polled trigger makes, through the same code. A webhook trigger with spec.report
// but no repo or token is refused by `validate`, naming the fields.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Gitea, startGitea } from '../support/gitea.ts';
import { triggerRunEnv, watchRun, writePublishTrigger } from '../support/gitea-trigger.ts';
import { runCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OWNER = 'episodic-admin';
const REPO = 'hooked';

describe('a webhook trigger reports back like a polled one (real Gitea, signed deliveries)', () => {
  let gitea: Gitea;
  const dir = tempDir();
  const statusFile = join(dir, '.episodic/triggers/default/wh.json');
  const reports = async () =>
    (await gitea.listComments(OWNER, REPO, 1)).filter(
      (c) => c.user.login === OWNER && c.body.startsWith('<!-- episodic:report wh/wh-1 -->'),
    );

  before(async () => {
    gitea = await startGitea();
    await gitea.createRepo(OWNER, REPO, { autoInit: true });
  });
  after(async () => {
    await gitea?.stop();
  });

  it('delivery → task → commit → the comment goes Running → Succeeded, one PR closes the issue', async () => {
    const alice = await gitea.createUser('alice');
    await gitea.addCollaborator(OWNER, REPO, alice.name, 'write');
    const agent = await gitea.createLabel(OWNER, REPO, 'agent');
    writePublishTrigger(dir, {
      name: 'wh',
      gitea,
      owner: OWNER,
      repo: REPO,
      writeFiles: { 'HOOKED.md': 'fixed #1\n' },
      webhookSecretEnv: 'TEST_HOOK_SECRET',
    });
    const port = await freePort();
    const env = { ...triggerRunEnv(dir, gitea, OWNER), TEST_HOOK_SECRET: 'hook-secret' };
    const { explain, stderr, stop } = watchRun(dir, env, statusFile, ['--hooks-addr', String(port)]);
    try {
      await waitFor('serving webhooks', () => stderr().includes('"msg":"serving webhooks"')).catch(explain);
      await gitea.createWebhook(OWNER, REPO, {
        url: `http://127.0.0.1:${port}/hooks/default/wh`,
        secret: 'hook-secret',
      });
      await gitea.createIssue(OWNER, REPO, { title: 'Hook it', body: 'please', labels: [agent.id] }, alice.token);
      const running = await waitFor(
        'the comment saying Running',
        async () => (await reports()).find((c) => c.body.includes('**Running**')),
        30_000,
      ).catch(explain);
      const done = await waitFor(
        'the comment saying Succeeded',
        async () => (await reports()).find((c) => c.body.includes('**Succeeded**')),
        60_000,
      ).catch(explain);
      assert.equal(done.id, running.id, 'the same comment, edited in place');
      const pulls = await waitFor('the pull request', async () => {
        const all = await gitea.listPulls(OWNER, REPO);
        return all.length > 0 ? all : undefined;
      }).catch(explain);
      assert.equal(pulls.length, 1);
      assert.equal(pulls[0].head.ref, 'episodic/1');
      assert.match(pulls[0].body, /Closes #1$/);
      assert.equal(pulls[0].title, 'episodic: Hook it');
      const status = await waitFor('status.pullRequests', () => {
        const s = JSON.parse(readFileSync(statusFile, 'utf8'));
        return s.pullRequests?.['wh-1'] ? s : undefined;
      }).catch(explain);
      assert.equal(status.pullRequests['wh-1'].number, pulls[0].number);
      assert.equal(status.tasksCreated, 1);
      assert.equal(status.lastError, undefined);
      assert.equal((await reports()).length, 1);
    } finally {
      await stop();
    }
  });

  it('validate: spec.report on a webhook source without repo and token names the missing fields', async () => {
    const bad = tempDir();
    writeFileSync(
      join(bad, 'bad.yaml'),
      `apiVersion: episodic.dev/v1alpha1
kind: AgentTrigger
metadata: {name: bad}
spec:
  source:
    webhook: {forge: gitea, secretEnv: TEST_HOOK_SECRET, labels: [agent]}
  report: {comment: true}
  template:
    spec:
      prompt: 'Fix #{{item.number}}'
      agent: {command: [node, agent.js], output: claude}
`,
    );
    const res = await runCli(['validate', join(bad, 'bad.yaml')]);
    assert.notEqual(res.code, 0);
    const out = res.stdout + res.stderr;
    assert.match(out, /spec\.source\.webhook\.repo: spec\.report writes through the forge API/);
    assert.match(out, /spec\.source\.webhook\.tokenEnv: .*tokenEnv \(local\) or tokenSecretRef \(cluster\)/);
    assert.match(out, /spec\.source\.webhook\.apiURL: /);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
