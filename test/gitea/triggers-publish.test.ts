// The full item lifecycle locally against the real Gitea, through `episodic run --watch`: a labelled issue →
// one task whose git workspace is the repo on branch episodic/1 → a stand-in agent that changes a file (the
// checkpoint commits it, the episode pushes it) → the report comment edited as the task moves (Running, then
// Succeeded) → one PR from episodic/1 that closes the issue, recorded in status.pullRequests. A restart
// (`run` again) creates no second task, PR or comment.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Gitea, type GiteaAccount, startGitea } from '../support/gitea.ts';
import { triggerRunEnv, watchRun, writePublishTrigger } from '../support/gitea-trigger.ts';
import { runCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OWNER = 'episodic-admin';
const REPO = 'publish';

interface Pull {
  number: number;
  title: string;
  body: string;
  html_url: string;
  head: { ref: string };
  base: { ref: string };
}

describe('a Gitea trigger publishes its work as a PR (real Gitea, local git workspace)', () => {
  let gitea: Gitea;
  let alice: GiteaAccount;
  const dir = tempDir();
  let env: Record<string, string>;

  const reports = async () =>
    (await gitea.listComments(OWNER, REPO, 1)).filter(
      (c) => c.user.login === OWNER && c.body.startsWith('<!-- episodic:report pub/pub-1 -->'),
    );
  const pulls = () => gitea.api<Pull[]>('GET', `/repos/${OWNER}/${REPO}/pulls`, { query: { state: 'all' } });
  const statusFile = join(dir, '.episodic/triggers/default/pub.json');

  before(async () => {
    gitea = await startGitea();
    alice = await gitea.createUser('alice');
    await gitea.createRepo(OWNER, REPO, { autoInit: true });
    await gitea.addCollaborator(OWNER, REPO, alice.name, 'write');
    const agent = await gitea.createLabel(OWNER, REPO, 'agent');
    await gitea.createIssue(OWNER, REPO, { title: 'Add a fix', body: 'please', labels: [agent.id] }, alice.token);
    env = triggerRunEnv(dir, gitea, OWNER);
    writePublishTrigger(dir, { name: 'pub', gitea, owner: OWNER, repo: REPO, writeFiles: { 'FIX.md': 'fixed #1\n' } });
  });
  after(async () => {
    await gitea?.stop();
  });

  it('labelled issue → task → commit pushed to episodic/1 → one PR closing it; the comment follows the task', async () => {
    const { explain, stop } = watchRun(dir, env, statusFile);
    try {
      const running = await waitFor(
        'the comment saying Running',
        async () => (await reports()).find((c) => c.body.includes('**Running**')),
        30_000,
      ).catch(explain);
      const pr = await waitFor('the pull request', async () => (await pulls())[0], 60_000).catch(explain);
      assert.equal(pr.head.ref, 'episodic/1');
      assert.equal(pr.base.ref, 'main');
      assert.equal(pr.title, 'episodic: Add a fix');
      assert.match(pr.body, /Closes #1$/);
      const files = await gitea.api<Array<{ filename: string }>>(
        'GET',
        `/repos/${OWNER}/${REPO}/pulls/${pr.number}/files`,
      );
      assert.deepEqual(
        files.map((f) => f.filename),
        ['FIX.md'],
      );
      const done = await waitFor(
        'the comment saying Succeeded',
        async () => (await reports()).find((c) => c.body.includes('**Succeeded**')),
        30_000,
      ).catch(explain);
      assert.equal(done.id, running.id, 'the same comment, edited in place');
      // Written with the pass that opened it (the PR shows on the forge a moment before).
      const recorded = await waitFor(
        'status.pullRequests',
        () => JSON.parse(readFileSync(statusFile, 'utf8')).pullRequests?.['pub-1'],
      );
      assert.deepEqual(recorded, { number: pr.number, url: pr.html_url });
      const labels = (await gitea.getIssue(OWNER, REPO, 1)).labels.map((l) => l.name).sort();
      assert.deepEqual(labels, ['agent', 'episodic:done']);
    } finally {
      await stop();
    }
  });

  it('a restart creates no second task, PR or comment', async () => {
    const res = await runCli(['run', dir, '--no-table'], { env, timeoutMs: 120_000 });
    assert.equal(res.code, 0, res.stderr);
    assert.equal((await pulls()).length, 1);
    assert.equal((await reports()).length, 1);
    const status = JSON.parse(readFileSync(statusFile, 'utf8'));
    assert.equal(status.tasksCreated, 1);
    assert.equal(status.lastError, undefined);
    assert.equal(status.pullRequests['pub-1'].number, (await pulls())[0].number);
    assert.ok(!readFileSync(statusFile, 'utf8').includes(gitea.adminToken), 'the token is not in status');
  });
});
