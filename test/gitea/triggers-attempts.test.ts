// Best-of-N under a reporting trigger (issue 32 §2), locally against the real Gitea: a labelled issue → one
// task with `attempts: {count: 2, select: evidence}` on branch episodic/1 → two attempts on their own branches
// making different changes (attempt 2's is smaller, so evidence picks it) → the winner's branch becomes
// episodic/1 → the trigger opens ONE PR from it holding the winner's work and not the loser's, and the issue's
// report comment says Succeeded.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Gitea, startGitea } from '../support/gitea.ts';
import { triggerRunEnv, watchRun, writePublishTrigger } from '../support/gitea-trigger.ts';
import { readStatus, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OWNER = 'episodic-admin';
const REPO = 'attempts';

interface Pull {
  number: number;
  html_url: string;
  head: { ref: string; sha: string };
  base: { ref: string };
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i}\n`).join('');

describe("best-of-2 under a reporting trigger: the PR is the winner's branch (real Gitea, local git)", () => {
  let gitea: Gitea;
  const dir = tempDir();
  let env: Record<string, string>;
  const statusFile = join(dir, '.episodic/triggers/default/att.json');
  const pulls = () => gitea.api<Pull[]>('GET', `/repos/${OWNER}/${REPO}/pulls`, { query: { state: 'all' } });
  const reports = async () =>
    (await gitea.listComments(OWNER, REPO, 1)).filter(
      (c) => c.user.login === OWNER && c.body.startsWith('<!-- episodic:report att/att-1 -->'),
    );

  before(async () => {
    gitea = await startGitea();
    await gitea.createRepo(OWNER, REPO, { autoInit: true });
    const agent = await gitea.createLabel(OWNER, REPO, 'agent');
    await gitea.createIssue(OWNER, REPO, { title: 'Pick the best', body: 'two tries', labels: [agent.id] });
    env = triggerRunEnv(dir, gitea, OWNER);
    writePublishTrigger(dir, {
      name: 'att',
      gitea,
      owner: OWNER,
      repo: REPO,
      writeFiles: {},
      templateSpec: '      attempts: {count: 2, select: evidence}\n',
    });
    // Each attempt its own change: attempt 1 a long file, attempt 2 a short one (fewer changed lines wins).
    const tasks = {
      'att-1-attempt-1': { mode: 'success', delayMs: 500, writeFiles: { 'LONG.md': lines(30) } },
      'att-1-attempt-2': { mode: 'success', delayMs: 500, writeFiles: { 'SHORT.md': lines(3) } },
    };
    writeFileSync(join(dir, 'att-agent.json'), JSON.stringify({ tasks }));
  });
  after(async () => {
    await gitea?.stop();
  });

  it("opens one PR from episodic/1 holding attempt 2's work only; the issue's report says Succeeded", async () => {
    const { explain, stop } = watchRun(dir, env, statusFile);
    try {
      const done = await waitFor(
        'the comment saying Succeeded',
        async () => (await reports()).find((c) => c.body.includes('**Succeeded**')),
        120_000,
      ).catch(explain);
      const pr = await waitFor('the pull request', async () => (await pulls())[0], 30_000).catch(explain);
      const task = readStatus(dir, 'att-1')?.status;
      assert.equal(task?.attempts?.winner, 2, JSON.stringify(task?.attempts));
      assert.equal(task?.attempts?.selectedBy, 'evidence');
      assert.equal(task?.attempts?.adopted?.into, 'episodic/1');
      assert.equal(pr.head.ref, 'episodic/1');
      assert.equal(pr.base.ref, 'main');
      assert.equal(pr.head.sha, task?.attempts?.adopted?.commit, "the PR's head is the adopted winner's commit");
      const files = await gitea.api<Array<{ filename: string }>>(
        'GET',
        `/repos/${OWNER}/${REPO}/pulls/${pr.number}/files`,
      );
      assert.deepEqual(
        files.map((f) => f.filename),
        ['SHORT.md'],
        "the winner's work, not the loser's",
      );
      assert.equal((await reports()).length, 1, 'one report comment');
      assert.match(done.body, /\*\*Succeeded\*\*/);
      const recorded = await waitFor(
        'status.pullRequests',
        () => JSON.parse(readFileSync(statusFile, 'utf8')).pullRequests?.['att-1'],
      ).catch(explain);
      assert.deepEqual(recorded, { number: pr.number, url: pr.html_url });
      assert.equal((await pulls()).length, 1, 'one PR');
    } finally {
      await stop();
    }
  });
});
