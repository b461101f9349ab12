// A PR item (`kind: pullRequests`) locally against the real Gitea, through `episodic run --watch`: an open PR
// from branch `feature` carrying the trigger label → one task whose git workspace is the PR's own branch → a
// stand-in agent that changes a file (the checkpoint commits it, the episode pushes it) → the commit is the
// head of `feature`, the report comment on the PR is edited to Succeeded, and no second PR and no
// episodic/N branch appear (issue 21 §2: "a PR item pushes to the PR's own branch instead").
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Gitea, type GiteaPull, startGitea } from '../support/gitea.ts';
import { triggerRunEnv, watchRun, writePublishTrigger } from '../support/gitea-trigger.ts';
import { runCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OWNER = 'episodic-admin';
const REPO = 'pr-item';

describe('a Gitea PR trigger pushes to the PR’s own branch (real Gitea, local git workspace)', () => {
  let gitea: Gitea;
  let pr: GiteaPull;
  const dir = tempDir();
  let env: Record<string, string>;
  const statusFile = join(dir, '.episodic/triggers/default/prt.json');

  const reports = async () =>
    (await gitea.listComments(OWNER, REPO, pr.number)).filter(
      (c) => c.user.login === OWNER && c.body.startsWith(`<!-- episodic:report prt/prt-${pr.number} -->`),
    );
  const featureHead = async () => (await gitea.waitForBranch(OWNER, REPO, 'feature')).commit;

  before(async () => {
    gitea = await startGitea();
    const alice = await gitea.createUser('alice');
    await gitea.createRepo(OWNER, REPO, { autoInit: true });
    await gitea.addCollaborator(OWNER, REPO, alice.name, 'write');
    const agent = await gitea.createLabel(OWNER, REPO, 'agent');
    await gitea.commitOnNewBranch(OWNER, REPO, { branch: 'feature', from: 'main', file: 'FEATURE.md' });
    pr = await gitea.createPull(
      OWNER,
      REPO,
      { head: 'feature', base: 'main', title: 'A feature', labels: [agent.id] },
      alice.token,
    );
    env = triggerRunEnv(dir, gitea, OWNER);
    writePublishTrigger(dir, {
      name: 'prt',
      gitea,
      owner: OWNER,
      repo: REPO,
      kind: 'pullRequests',
      writeFiles: { 'REVIEWED.md': 'done\n' },
    });
  });
  after(async () => {
    await gitea?.stop();
  });

  it('labelled PR → one task → its commit lands on feature; still one PR, no episodic/N branch', async () => {
    const before = await featureHead();
    const { explain, stop } = watchRun(dir, env, statusFile);
    try {
      const running = await waitFor(
        'the comment on the PR saying Running',
        async () => (await reports()).find((c) => c.body.includes('**Running**')),
        30_000,
      ).catch(explain);
      const done = await waitFor(
        'the comment on the PR saying Succeeded',
        async () => (await reports()).find((c) => c.body.includes('**Succeeded**')),
        60_000,
      ).catch(explain);
      assert.equal(done.id, running.id, 'the same comment, edited in place');
      const head = await featureHead();
      assert.notEqual(head.id, before.id, 'feature moved');
      const changed = await gitea.api<Array<{ filename: string }>>(
        'GET',
        `/repos/${OWNER}/${REPO}/pulls/${pr.number}/files`,
      );
      assert.deepEqual(changed.map((f) => f.filename).sort(), ['FEATURE.md', 'REVIEWED.md']);
      const pulls = await gitea.listPulls(OWNER, REPO);
      assert.deepEqual(
        pulls.map((p) => [p.number, p.head.ref, p.head.sha]),
        [[pr.number, 'feature', head.id]],
      );
      const branches = (await gitea.listBranches(OWNER, REPO)).map((b) => b.name).sort();
      assert.deepEqual(branches, ['feature', 'main']);
      // The pass that pushed writes status after its comment and labels.
      const status = await waitFor('status.reported publishedBranch', () => {
        const status = JSON.parse(readFileSync(statusFile, 'utf8'));
        return status.reported?.[`prt-${pr.number}`]?.publishedBranch ? status : undefined;
      }).catch(explain);
      assert.equal(status.tasksCreated, 1);
      assert.equal(status.reported[`prt-${pr.number}`].publishedBranch, 'feature');
      assert.equal(status.pullRequests?.[`prt-${pr.number}`], undefined, 'no PR of its own');
      assert.equal(status.lastError, undefined);
      const labels = (await gitea.getIssue(OWNER, REPO, pr.number)).labels.map((l) => l.name).sort();
      assert.deepEqual(labels, ['agent', 'episodic:done']);
    } finally {
      await stop();
    }
  });

  it('a PR from a fork gets no task: its comment says why, and nothing is pushed to either repo', async () => {
    const base = 'forked';
    const forkDir = tempDir();
    const alice = await gitea.createUser('carol');
    await gitea.createRepo(OWNER, base, { autoInit: true });
    const agent = await gitea.createLabel(OWNER, base, 'agent');
    await gitea.fork(OWNER, base, alice.token);
    await gitea.commitOnNewBranch(alice.name, base, { branch: 'feature', from: 'main', file: 'FORKED.md' });
    const forkHead = (await gitea.waitForBranch(alice.name, base, 'feature')).commit.id;
    const forkPr = await gitea.createPull(
      OWNER,
      base,
      { head: `${alice.name}:feature`, base: 'main', title: 'From a fork' },
      alice.token,
    );
    await gitea.api('POST', `/repos/${OWNER}/${base}/issues/${forkPr.number}/labels`, { body: { labels: [agent.id] } });
    writePublishTrigger(forkDir, {
      name: 'fk',
      gitea,
      owner: OWNER,
      repo: base,
      kind: 'pullRequests',
      writeFiles: { 'REVIEWED.md': 'done\n' },
    });
    const res = await runCli(['run', forkDir, '--no-table'], { env: triggerRunEnv(forkDir, gitea, OWNER) });
    // No task at all: `run` says there was nothing to run and exits 0 (issue 31); the refusal is on the PR.
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /nothing to run; 1 trigger is served only with --watch/);
    assert.match(res.stderr, /item refused: no task/);
    const comments = (await gitea.listComments(OWNER, base, forkPr.number)).filter((c) =>
      c.body.startsWith(`<!-- episodic:report fk/fk-${forkPr.number} -->`),
    );
    assert.equal(comments.length, 1, res.stderr);
    assert.match(comments[0].body, /\*\*not started\*\*/);
    assert.match(
      comments[0].body,
      /cannot push to a fork's branch \(the PR's head is in carol\/forked, not episodic-admin\/forked\)/,
    );
    const status = JSON.parse(readFileSync(join(forkDir, '.episodic/triggers/default/fk.json'), 'utf8'));
    assert.equal(status.tasksCreated, 0);
    assert.deepEqual(
      (await gitea.listBranches(OWNER, base)).map((b) => b.name),
      ['main'],
      'no branch pushed to the base repo',
    );
    assert.equal((await gitea.waitForBranch(alice.name, base, 'feature')).commit.id, forkHead, 'the fork untouched');
    assert.equal((await gitea.listPulls(OWNER, base)).length, 1);
  });
});
