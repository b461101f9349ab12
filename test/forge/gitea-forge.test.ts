// The Gitea forge against a real Gitea 1.26 (test/support/gitea.ts): polls with since= and labels, comments,
// permissions, the report comment edited in place, labels swapped, push + idempotent PR, a webhook Gitea
// signs itself, and no token in any error. Needs the cached build: npm run gitea:build.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it, test } from 'node:test';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { forgeCounter } from '../support/forge-counter.ts';
import { GiteaForge, giteaStillChecking } from '../../controller/forge/gitea.ts';
import {
  type HookDelivery,
  type HookOutcome,
  type HookServer,
  startHookServer,
} from '../../controller/forge/hook-server.ts';

import { openForge } from '../../controller/forge/open-forge.ts';
import { itemBranch, publishWork, pushBranch } from '../../controller/forge/push.ts';
import { ForgeRequestError, ForgeUnavailableError, reportMarker } from '../../controller/forge/types.ts';
import { type Gitea, type GiteaAccount, gitAuthEnv, startGitea } from '../support/gitea.ts';

const execFileAsync = promisify(execFile);
const owner = 'episodic-admin';
const repo = 'widgets';

describe('GiteaForge against a real Gitea', () => {
  let gitea: Gitea;
  let robot: GiteaAccount;
  let alice: GiteaAccount;
  let reader: GiteaAccount;
  let forge: GiteaForge;
  const registry = new Registry();
  const metrics = forgeCounter(registry);

  before(async () => {
    gitea = await startGitea();
    [robot, alice, reader] = await Promise.all(['robot', 'alice', 'reader'].map((n) => gitea.createUser(n)));
    await gitea.createRepo(owner, repo, { private: true, autoInit: true });
    // Gitea shows other users' roles only to a repo admin.
    await gitea.addCollaborator(owner, repo, robot.name, 'admin');
    await gitea.addCollaborator(owner, repo, alice.name, 'write');
    await gitea.addCollaborator(owner, repo, reader.name, 'read');
    await gitea.createLabel(owner, repo, 'agent');
    forge = new GiteaForge({ apiURL: gitea.url, repo: `${owner}/${repo}`, token: robot.token, metrics });
  });
  after(async () => {
    await gitea?.stop();
  });
  const requestCount = async () => {
    const metric = await registry.getSingleMetric('episodic_forge_requests_total')?.get();
    return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
  };

  it('lists open issues with the labels, filtering unknown label names itself, and since= narrows', async () => {
    const [agent] = await gitea.api<Array<{ id: number }>>('GET', `/repos/${owner}/${repo}/labels`);
    const labelled = await gitea.createIssue(owner, repo, { title: 'Labelled', labels: [agent.id] }, alice.token);
    const plain = await gitea.createIssue(owner, repo, { title: 'Plain', body: 'no labels' }, alice.token);
    const byLabel = await forge.listItems({ kind: 'issues', labels: ['agent'] });
    assert.equal(byLabel.kind, 'listed');
    assert.deepEqual(byLabel.kind === 'listed' && byLabel.entries.map((i) => i.number), [labelled.number]);
    const item = byLabel.kind === 'listed' ? byLabel.entries[0] : undefined;
    assert.deepEqual(
      { ...item, updatedAt: undefined },
      {
        number: labelled.number,
        title: 'Labelled',
        body: '',
        url: labelled.html_url,
        author: 'alice',
        authorIsBot: false,
        labels: ['agent'],
        open: true,
        isPullRequest: false,
        updatedAt: undefined,
        comments: 0,
      },
    );
    // Gitea itself answers an unknown label name with every issue: the client still returns none.
    const raw = await gitea.listIssues(owner, repo, { labels: 'no-such-label', state: 'open', type: 'issues' });
    assert.ok(raw.length >= 2, 'gitea dropped the unknown label filter');
    assert.deepEqual(await forge.listItems({ kind: 'issues', labels: ['no-such-label'] }), {
      kind: 'listed',
      entries: [],
    });

    const all = await forge.listItems({ kind: 'issues', since: labelled.updated_at });
    assert.deepEqual(
      all.kind === 'listed' && all.entries.map((i) => i.number).sort(),
      [labelled.number, plain.number].sort(),
    );
    // since= is inclusive at one-second resolution: wait for the next second, then a comment bumps `plain` only.
    const next = new Date(Math.floor(Date.parse(plain.updated_at) / 1000) * 1000 + 1000);
    while (Date.now() < next.getTime() + 50) await new Promise((r) => setTimeout(r, 50));
    await gitea.comment(owner, repo, plain.number, 'bump', alice.token);
    const since = await forge.listItems({ kind: 'issues', since: next.toISOString() });
    assert.deepEqual(since.kind === 'listed' && since.entries.map((i) => i.number), [plain.number]);
    assert.deepEqual(await forge.listItems({ kind: 'pullRequests' }), { kind: 'listed', entries: [] });
  });

  it('lists comments of one item and of the whole repo, with the item number and author', async () => {
    const issue = await gitea.createIssue(owner, repo, { title: 'Commented' }, alice.token);
    const c1 = await gitea.comment(owner, repo, issue.number, '/episodic go', alice.token);
    const c2 = await gitea.comment(owner, repo, issue.number, 'me too', reader.token);
    const one = await forge.listComments({ number: issue.number });
    assert.deepEqual(one.kind === 'listed' && one.entries.map((c) => [c.id, c.itemNumber, c.author, c.body]), [
      [c1.id, issue.number, 'alice', '/episodic go'],
      [c2.id, issue.number, 'reader', 'me too'],
    ]);
    const repoWide = await forge.listComments({ since: c1.created_at });
    const mine = repoWide.kind === 'listed' ? repoWide.entries.filter((c) => c.itemNumber === issue.number) : [];
    assert.deepEqual(
      mine.map((c) => c.id),
      [c1.id, c2.id],
    );
  });

  it('reads an item with more comments than a page once: its comments endpoint ignores page and limit', async () => {
    const issue = await gitea.createIssue(owner, repo, { title: 'Busy' }, alice.token);
    for (let i = 0; i < 55; i++) await gitea.comment(owner, repo, issue.number, `c${i}`, alice.token);
    const before = await requestCount();
    const listed = await forge.listComments({ number: issue.number });
    assert.equal(listed.kind === 'listed' && new Set(listed.entries.map((c) => c.id)).size, 55);
    assert.equal(listed.kind === 'listed' && listed.entries.length, 55);
    assert.equal((await requestCount()) - before, 1);
    assert.equal((await forge.upsertReport(issue.number, 'busy', 'x')).action, 'created');
    assert.equal((await forge.upsertReport(issue.number, 'busy', 'y')).action, 'updated');
  });

  it('reads a user permission: write, read, none; a token without admin rights is told so', async () => {
    const outsider = await gitea.createUser('outsider');
    const asAlice = new GiteaForge({ apiURL: gitea.url, repo: `${owner}/${repo}`, token: alice.token });
    const refused = await asAlice.permission('reader').then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(refused instanceof ForgeRequestError && refused.status === 403, String(refused));
    assert.equal(await forge.permission('alice'), 'write');
    assert.equal(await forge.permission('reader'), 'read');
    assert.equal(await forge.permission(outsider.name), undefined);
    assert.equal(await forge.permission(owner), 'admin');
  });

  it('keeps exactly one report comment per item, edited in place, never one by someone else', async () => {
    const issue = await gitea.createIssue(owner, repo, { title: 'Reported' }, alice.token);
    // A human quoting the marker: not ours, never edited.
    await gitea.comment(owner, repo, issue.number, `${reportMarker('t-1')}\nfake`, alice.token);
    const first = await forge.upsertReport(issue.number, 't-1', 'Phase: Running');
    const second = await forge.upsertReport(issue.number, 't-1', 'Phase: Succeeded');
    const third = await forge.upsertReport(issue.number, 't-1', 'Phase: Succeeded');
    assert.deepEqual([first.action, second.action, third.action], ['created', 'updated', 'unchanged']);
    assert.equal(second.id, first.id);
    const comments = await gitea.listComments(owner, repo, issue.number);
    const robots = comments.filter((c) => c.user.login === 'robot');
    assert.equal(robots.length, 1);
    assert.equal(robots[0].body, `${reportMarker('t-1')}\nPhase: Succeeded`);
    assert.ok(comments.some((c) => c.user.login === 'alice' && c.body.endsWith('fake')));
  });

  it('swaps labels, creating missing ones', async () => {
    const issue = await gitea.createIssue(owner, repo, { title: 'Labels' }, alice.token);
    assert.deepEqual(await forge.swapLabels(issue.number, { add: ['episodic:running'] }), ['episodic:running']);
    const after = await forge.swapLabels(issue.number, {
      add: ['episodic:done'],
      remove: ['episodic:running', 'absent'],
    });
    assert.deepEqual(after, ['episodic:done']);
    assert.deepEqual(
      (await gitea.getIssue(owner, repo, issue.number)).labels.map((l) => l.name),
      ['episodic:done'],
    );
  });

  it('pushes episodic/N and opens one PR that closes the issue; a second publish updates it', async (t) => {
    const issue = await gitea.createIssue(owner, repo, { title: 'Needs a PR' }, alice.token);
    const work = await mkdtemp(path.join(os.tmpdir(), 'episodic-forge-push-'));
    try {
      const git = (args: string[]) =>
        execFileAsync('git', args, { cwd: work, env: { ...process.env, ...gitAuthEnv(robot.name, robot.token) } });
      await git(['clone', '-q', gitea.cloneUrl(owner, repo), '.']);
      const commit = async (file: string) => {
        await writeFile(path.join(work, file), `${file}\n`);
        await git(['add', file]);
        await git(['-c', 'user.name=Robot', '-c', 'user.email=robot@example.invalid', 'commit', '-q', '-m', file]);
      };
      await commit('one.txt');
      const credentials = { username: robot.name, token: robot.token };
      const branch = itemBranch(issue.number);
      const push = { workspace: work, remoteUrl: gitea.cloneUrl(owner, repo), branch, credentials };
      const pull = { base: 'main', title: 'Fix: Needs a PR', body: 'The agent did it.', closes: issue.number };
      let started = Date.now();
      const first = await publishWork(forge, push, pull);
      t.diagnostic(`first publish (push, branch visible, PR created): ${Date.now() - started} ms`);
      assert.equal(first.action, 'created');
      await commit('two.txt');
      started = Date.now();
      const second = await publishWork(forge, push, { ...pull, title: 'Fix: Needs a PR (2)' });
      t.diagnostic(`second publish (push, PR updated): ${Date.now() - started} ms`);
      assert.deepEqual([second.action, second.number], ['updated', first.number]);
      const third = await forge.ensurePullRequest({ ...pull, head: branch, title: 'Fix: Needs a PR (2)' });
      assert.equal(third.action, 'unchanged');
      const pulls = await gitea.api<
        Array<{ number: number; body: string; title: string; head: { ref: string; sha: string } }>
      >('GET', `/repos/${owner}/${repo}/pulls`, { query: { state: 'all' } });
      assert.equal(pulls.length, 1);
      assert.equal(pulls[0].body, `The agent did it.\n\nCloses #${issue.number}`);
      assert.equal(pulls[0].title, 'Fix: Needs a PR (2)');
      assert.deepEqual([pulls[0].head.ref, pulls[0].head.sha], [branch, second.commit]);
      const fetched = await forge.getPullRequest(first.number);
      assert.deepEqual(
        [fetched.isPullRequest, fetched.headBranch, fetched.headRepo, fetched.author],
        [true, branch, `${owner}/${repo}`, 'robot'],
      );
      const prs = await forge.listItems({ kind: 'pullRequests' });
      assert.deepEqual(prs.kind === 'listed' && prs.entries.map((p) => [p.number, p.isPullRequest]), [
        [first.number, true],
      ]);

      const badPush = pushBranch({ ...push, credentials: { username: robot.name, token: 'wrong-token-123456' } });
      const err = await badPush.then(
        () => undefined,
        (e: Error) => e,
      );
      assert.ok(err instanceof Error);
      assert.ok(!`${err.message}${err.stack}`.includes('wrong-token-123456'));
      assert.ok(!`${err.message}${err.stack}`.includes(robot.token));
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  it('opens a PR right after the push that made an empty repo non-empty (Gitea answers 409/500 for a moment)', async () => {
    await gitea.createRepo(owner, 'fresh');
    await gitea.addCollaborator(owner, 'fresh', robot.name, 'write');
    const work = await mkdtemp(path.join(os.tmpdir(), 'episodic-forge-fresh-'));
    try {
      const auth = { ...process.env, ...gitAuthEnv(robot.name, robot.token) };
      const git = (args: string[]) => execFileAsync('git', args, { cwd: work, env: auth });
      await git(['init', '-q', '-b', 'main']);
      for (const file of ['a.txt', 'b.txt']) {
        await writeFile(path.join(work, file), `${file}\n`);
        await git(['add', file]);
        await git(['-c', 'user.name=R', '-c', 'user.email=r@example.invalid', 'commit', '-q', '-m', file]);
      }
      // One push creates both branches of the empty repo; the PR is asked for the moment it returns.
      await git(['push', '-q', gitea.cloneUrl(owner, 'fresh'), 'HEAD~1:refs/heads/main', 'HEAD:refs/heads/episodic/1']);
      const fresh = openForge({ forge: 'gitea', apiURL: gitea.url, repo: `${owner}/fresh`, token: robot.token });
      // No waitForBranch: ensurePullRequest itself rides out the window.
      const pr = await fresh.ensurePullRequest({ head: 'episodic/1', base: 'main', title: 'B', body: 'b' });
      assert.equal(pr.action, 'created');
      const pulls = await gitea.api<unknown[]>('GET', `/repos/${owner}/fresh/pulls`, { query: { state: 'all' } });
      assert.equal(pulls.length, 1);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  it('turns a bad token and a dead server into typed errors that never hold the token, and counts requests', async () => {
    const token = 'secret-token-0123456789';
    const bad = new GiteaForge({ apiURL: gitea.url, repo: `${owner}/${repo}`, token, metrics });
    const refused = await bad.listItems({ kind: 'issues' }).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(refused instanceof ForgeRequestError);
    assert.equal(refused.status, 401);
    const dead = new GiteaForge({
      apiURL: 'http://127.0.0.1:1',
      repo: `${owner}/${repo}`,
      token,
      metrics: forgeCounter(new Registry()),
    });
    const down = await dead.listItems({ kind: 'issues' }).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(down instanceof ForgeUnavailableError);
    for (const e of [refused, down]) assert.ok(!`${e.message}${e.stack}${JSON.stringify(e)}`.includes(token));
    const text = await registry.metrics();
    assert.match(text, /episodic_forge_requests_total\{forge="gitea",code="200"\} [1-9]/);
    assert.match(text, /episodic_forge_requests_total\{forge="gitea",code="401"\} 1/);
    assert.ok(!text.includes(token) && !text.includes(robot.token));
  });

  describe('webhooks Gitea signs itself', () => {
    let server: HookServer;
    const delivered: HookDelivery[] = [];
    const outcomes: HookOutcome[] = [];
    let onOutcome: () => void = () => {};

    before(async () => {
      const secrets: Record<string, string> = { good: 'right-secret-abc', bad: 'trigger-secret-xyz' };
      server = await startHookServer({
        resolve: (_ns, trigger) => (secrets[trigger] ? { forge: 'gitea', secret: secrets[trigger] } : undefined),
        onItem: (d) => {
          delivered.push(d);
        },
        onOutcome: (o) => {
          outcomes.push(o);
          onOutcome();
        },
      });
    });
    after(async () => {
      await server?.close();
    });

    it('accepts a delivery signed with the secret and rejects one signed with another (401)', async () => {
      await gitea.createWebhook(owner, repo, { url: `${server.url}/hooks/default/good`, secret: 'right-secret-abc' });
      await gitea.createWebhook(owner, repo, { url: `${server.url}/hooks/default/bad`, secret: 'not-the-secret' });
      const both = new Promise<void>((resolve) => {
        onOutcome = () => {
          const done = (t: string) => outcomes.some((o) => o.trigger === t && o.reason !== 'replayed delivery ignored');
          if (done('good') && done('bad')) resolve();
        };
      });
      const issue = await gitea.createIssue(owner, repo, { title: 'From a hook', body: 'hello' }, alice.token);
      await both;
      assert.deepEqual(outcomes.map((o) => [o.trigger, o.status, o.reason]).sort(), [
        ['bad', 401, 'bad signature'],
        ['good', 202, 'accepted'],
      ]);
      assert.equal(delivered.length, 1);
      const [d] = delivered;
      assert.deepEqual([d.namespace, d.trigger, d.event, d.action], ['default', 'good', 'issues', 'opened']);
      assert.deepEqual(
        [d.item.number, d.item.title, d.item.body, d.item.author],
        [issue.number, 'From a hook', 'hello', 'alice'],
      );
    });
  });
});

test("giteaStillChecking: Gitea's 405 'Please try again later' is retried, any other refusal is an answer", () => {
  const err = (status: number, message: string) => new ForgeRequestError(message, status);
  assert.equal(giteaStillChecking(err(405, 'gitea POST /x -> 405: {"message":"Please try again later"}')), true);
  assert.equal(giteaStillChecking(err(405, 'gitea POST /x -> 405: {"message":"not allowed to merge"}')), false);
  assert.equal(giteaStillChecking(err(409, 'gitea POST /x -> 409: Please try again later')), false);
  assert.equal(giteaStillChecking(new Error('Please try again later')), false);
});
