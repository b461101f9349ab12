// The GitHub forge (Octokit) against a local stand-in answering in GitHub's documented shapes
// (test/support/github-standin.ts): the requests Octokit makes are asserted — a poll with nothing new is one
// request answered 304, rate limits become a typed wait, the PR and the report comment are idempotent.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { forgeCounter } from '../support/forge-counter.ts';
import { GitHubForge } from '../../controller/forge/github.ts';

import {
  ForgeRateLimitedError,
  ForgeRequestError,
  ForgeUnavailableError,
  reportMarker,
} from '../../controller/forge/types.ts';
import { GitHubStandin, HEAD_SHA } from '../support/github-standin.ts';

const TOKEN = 'ghp_standinTokenValue0123456789';
const REPO = 'octo/widgets';

describe('GitHubForge against a stand-in in GitHub shapes', () => {
  let gh: GitHubStandin;
  let forge: GitHubForge;
  const registry = new Registry();
  const metrics = forgeCounter(registry);
  const now = new Date('2026-11-25T12:00:00Z');

  before(async () => {
    gh = await new GitHubStandin({ token: TOKEN, login: 'episodic-bot', repo: REPO }).start();
  });
  after(async () => {
    await gh?.stop();
  });
  beforeEach(() => {
    [gh.issues, gh.comments, gh.requests.length] = [[], [], 0];
    [gh.rateLimitedUntil, gh.retryAfterSeconds, gh.down] = [undefined, undefined, false];
    forge = new GitHubForge({ apiURL: gh.url, repo: REPO, token: TOKEN, metrics, now: () => now });
  });

  it('polls with the ETag of the last answer: nothing new costs one request answered 304', async () => {
    const a = gh.addIssue({ title: 'A', labels: ['agent'] });
    gh.addIssue({ title: 'B' });
    const first = await forge.listItems({ kind: 'issues', labels: ['agent'] });
    assert.deepEqual(
      first.kind === 'listed' && first.entries.map((i) => [i.number, i.title, i.labels, i.isPullRequest]),
      [[a.number, 'A', ['agent'], false]],
    );
    const [req] = gh.requests;
    assert.equal(req.authorization, `token ${TOKEN}`);
    assert.match(req.url, /^\/repos\/octo\/widgets\/issues\?/);
    const q = new URL(req.url, gh.url).searchParams;
    assert.deepEqual(
      [q.get('state'), q.get('labels'), q.get('sort'), q.get('direction'), q.get('per_page')],
      ['open', 'agent', 'updated', 'desc', '100'],
    );

    gh.requests.length = 0;
    assert.deepEqual(await forge.listItems({ kind: 'issues', labels: ['agent'], since: a.updated_at }), {
      kind: 'unchanged',
    });
    assert.deepEqual(
      gh.requests.map((r) => [r.method, r.status, r.url === req.url, typeof r.ifNoneMatch]),
      [['GET', 304, true, 'string']],
    );

    gh.requests.length = 0;
    const c = gh.addComment(a.number, 'alice', '/episodic go');
    const changed = await forge.listItems({ kind: 'issues', labels: ['agent'], since: c.updated_at });
    assert.deepEqual(changed.kind === 'listed' && changed.entries.map((i) => [i.number, i.updatedAt]), [
      [a.number, c.updated_at],
    ]);
    assert.deepEqual(
      gh.requests.map((r) => r.status),
      [200],
    );
    assert.match(await registry.metrics(), /episodic_forge_requests_total\{forge="github",code="304"\} 1/);
  });

  it('reads further pages only while items are as new as since', async () => {
    for (let i = 0; i < 250; i++) gh.addIssue({ title: `I${i}` });
    const all = await forge.listItems({ kind: 'issues' });
    assert.equal(all.kind === 'listed' && all.entries.length, 250);
    assert.equal(gh.requests.length, 3);
    gh.requests.length = 0;
    forge = new GitHubForge({ apiURL: gh.url, repo: REPO, token: TOKEN, now: () => now });
    const recent = await forge.listItems({ kind: 'issues', since: gh.issues[240].updated_at });
    assert.deepEqual(
      recent.kind === 'listed' && recent.entries.map((i) => i.title).sort(),
      gh.issues
        .slice(240)
        .map((i) => i.title)
        .sort(),
    );
    assert.equal(gh.requests.length, 1);
  });

  it('lists comments of the repo since a time and of one item, bots marked', async () => {
    const a = gh.addIssue({ title: 'A' });
    const old = gh.addComment(a.number, 'alice', 'old');
    const fresh = gh.addComment(a.number, 'renovate[bot]', 'new');
    const since = await forge.listComments({ since: fresh.updated_at });
    assert.deepEqual(
      since.kind === 'listed' && since.entries.map((c) => [c.id, c.itemNumber, c.author, c.authorIsBot]),
      [[fresh.id, a.number, 'renovate[bot]', true]],
    );
    const one = await forge.listComments({ number: a.number });
    assert.deepEqual(one.kind === 'listed' && one.entries.map((c) => c.id), [old.id, fresh.id]);
    assert.deepEqual(await forge.listComments({ number: a.number }), { kind: 'unchanged' });
  });

  it('reads permissions by role name', async () => {
    gh.permissions = {
      maya: { permission: 'write', role_name: 'maintain' },
      rita: { permission: 'read', role_name: 'read' },
      nobody: { permission: 'none', role_name: 'none' },
    };
    assert.deepEqual(
      [
        await forge.permission('maya'),
        await forge.permission('rita'),
        await forge.permission('nobody'),
        await forge.permission('ghost'),
      ],
      ['maintain', 'read', undefined, undefined],
    );
  });

  it('keeps one report comment per item, edited in place, leaving others that quote the marker alone', async () => {
    const a = gh.addIssue({ title: 'A' });
    gh.addComment(a.number, 'alice', `${reportMarker('t-1')} quoted`);
    const actions = [];
    for (const body of ['Running', 'Succeeded', 'Succeeded'])
      actions.push((await forge.upsertReport(a.number, 't-1', body)).action);
    assert.deepEqual(actions, ['created', 'updated', 'unchanged']);
    const ours = gh.comments.filter((c) => c.user === 'episodic-bot');
    assert.deepEqual(
      ours.map((c) => c.body),
      [`${reportMarker('t-1')}\nSucceeded`],
    );
    assert.deepEqual(
      gh.requests.filter((r) => r.method !== 'GET').map((r) => [r.method, r.status]),
      [
        ['POST', 201],
        ['PATCH', 200],
      ],
    );
    assert.deepEqual(
      gh.requests.filter((r) => r.url.startsWith('/user')).map((r) => r.url),
      ['/user'],
    );
  });

  it('swaps labels', async () => {
    const a = gh.addIssue({ title: 'A', labels: ['agent', 'episodic:running'] });
    assert.deepEqual(
      await forge.swapLabels(a.number, { add: ['episodic:done'], remove: ['episodic:running', 'absent'] }),
      ['agent', 'episodic:done'],
    );
    assert.deepEqual(gh.issues[0].labels, ['agent', 'episodic:done']);
  });

  it('finds or creates the PR for a head: created once, then updated, then left alone', async () => {
    const issue = gh.addIssue({ title: 'Bug' });
    const input = {
      head: 'episodic/1',
      base: 'main',
      title: 'Fix the bug',
      body: 'Done by an agent.',
      closes: issue.number,
      draft: true,
    };
    const first = await forge.ensurePullRequest(input);
    const second = await forge.ensurePullRequest({ ...input, title: 'Fix the bug (again)' });
    const third = await forge.ensurePullRequest({ ...input, title: 'Fix the bug (again)' });
    assert.deepEqual([first.action, second.action, third.action], ['created', 'updated', 'unchanged']);
    assert.equal(second.number, first.number);
    const pulls = gh.issues.filter((i) => i.pull);
    assert.equal(pulls.length, 1);
    assert.deepEqual(
      [pulls[0].title, pulls[0].body, pulls[0].pull?.draft],
      ['Fix the bug (again)', 'Done by an agent.\n\nCloses #1', true],
    );
    const fetched = await forge.getPullRequest(first.number);
    assert.deepEqual(
      [fetched.isPullRequest, fetched.headBranch, fetched.title],
      [true, 'episodic/1', 'Fix the bug (again)'],
    );
    const lookups = gh.requests.filter((r) => r.method === 'GET' && r.url.startsWith('/repos/octo/widgets/pulls?'));
    assert.deepEqual(
      lookups.map((r) => new URL(r.url, gh.url).searchParams.get('head')),
      ['octo:episodic/1', 'octo:episodic/1', 'octo:episodic/1'],
    );
    assert.deepEqual(
      gh.requests.filter((r) => r.method !== 'GET').map((r) => r.method),
      ['POST', 'PATCH'],
    );
  });

  it('merges a PR by rebase pinned to its head; a moved head or a closed PR is a refusal, not an error', async () => {
    const make = (head: string) => forge.ensurePullRequest({ head, base: 'main', title: head, body: '' });
    const pr = await make('episodic/1');
    assert.deepEqual(await forge.pullMergeState(pr.number), { state: 'open', head: HEAD_SHA });
    const moved = await forge.mergePullRequest(pr.number, 'a'.repeat(40));
    assert.equal(moved.kind, 'refused');
    assert.match(moved.kind === 'refused' ? moved.reason : '', /-> 409: Head branch was modified/);
    const merged = await forge.mergePullRequest(pr.number, HEAD_SHA);
    assert.equal(merged.kind, 'merged');
    const sent = gh.requests.filter((r) => r.method === 'PUT').map((r) => r.body);
    assert.deepEqual(sent.at(-1), { merge_method: 'rebase', sha: HEAD_SHA });
    const state = await forge.pullMergeState(pr.number);
    assert.equal(state.state, 'merged');
    assert.equal(state.mergeCommit, merged.kind === 'merged' ? merged.commit : 'none', 'the commit it answered');
    const again = await forge.mergePullRequest(pr.number, HEAD_SHA);
    assert.match(again.kind === 'refused' ? again.reason : '', /-> 405: Pull Request is not mergeable/);
    assert.ok(!JSON.stringify(again).includes(TOKEN));
  });

  it('turns a primary rate limit into a wait until x-ratelimit-reset, and a secondary one into retry-after', async () => {
    gh.rateLimitedUntil = new Date('2026-11-25T12:34:56Z');
    assert.deepEqual(await forge.listItems({ kind: 'issues' }), { kind: 'rateLimited', resetAt: gh.rateLimitedUntil });
    assert.equal(gh.requests.length, 1);
    const write = await forge.upsertReport(1, 't', 'x').then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(write instanceof ForgeRateLimitedError);
    assert.deepEqual(write.resetAt, gh.rateLimitedUntil);
    gh.rateLimitedUntil = undefined;
    gh.retryAfterSeconds = 90;
    assert.deepEqual(await forge.listComments({}), { kind: 'rateLimited', resetAt: new Date(now.getTime() + 90_000) });
  });

  it('reports an outage and a bad token as typed errors that never hold the token', async () => {
    gh.down = true;
    const down = await forge.listItems({ kind: 'issues' }).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(down instanceof ForgeUnavailableError, String(down));
    gh.down = false;
    const bad = new GitHubForge({ apiURL: gh.url, repo: REPO, token: `${TOKEN}x` });
    const refused = await bad.ensurePullRequest({ head: 'h', base: 'main', title: 't', body: '' }).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(refused instanceof ForgeRequestError && refused.status === 401, String(refused));
    const dead = new GitHubForge({ apiURL: 'http://127.0.0.1:1', repo: REPO, token: TOKEN });
    const unreachable = await dead.listItems({ kind: 'issues' }).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(unreachable instanceof ForgeUnavailableError, String(unreachable));
    for (const e of [down, refused, unreachable]) {
      assert.ok(!`${e.message}\n${e.stack}\n${JSON.stringify(e)}`.includes(TOKEN), e.message);
    }
    assert.ok(!(await registry.metrics()).includes(TOKEN));
  });
});
