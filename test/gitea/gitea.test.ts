// Smoke test of the real Gitea the trigger tests use (test/support/gitea.ts): users and tokens, a push over
// HTTP, issues with labels and comments, the list filters a poller relies on, permissions, and a signed
// webhook delivered to a listener on 127.0.0.1. Needs the cached build: npm run gitea:build.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type Gitea, type GiteaAccount, type GiteaIssue, gitAuthEnv, startGitea } from '../support/gitea.ts';

const execFileAsync = promisify(execFile);

describe('gitea (the real forge for trigger tests)', () => {
  let gitea: Gitea;
  let alice: GiteaAccount;
  let outsider: GiteaAccount;
  const owner = 'episodic-admin';
  const repo = 'widgets';
  let labelled: GiteaIssue;
  let plain: GiteaIssue;

  before(async () => {
    gitea = await startGitea();
    alice = await gitea.createUser('alice');
    outsider = await gitea.createUser('outsider');
    await gitea.createRepo(owner, repo);
    await gitea.addCollaborator(owner, repo, alice.name, 'write');
  });
  after(async () => {
    await gitea?.stop();
  });

  it('started as a non-root user, with an admin token, and reports its start time and memory', async (t) => {
    const me = await gitea.api<{ login: string; is_admin: boolean }>('GET', '/user');
    assert.deepEqual([me.login, me.is_admin], [owner, true]);
    const anonymous = await gitea.request('GET', '/user', { token: null });
    assert.equal(anonymous.status, 401);
    if (process.getuid?.() === 0) assert.notEqual(await gitea.uid(), 0);
    const rss = await gitea.rss();
    assert.ok(rss > 10 * 2 ** 20, `rss ${rss}`);
    t.diagnostic(`gitea answered ${gitea.startMs} ms after spawn; RSS ${(rss / 2 ** 20).toFixed(0)} MiB`);
  });

  it('takes a push over HTTP from a collaborator, the token never in argv or output', async () => {
    const work = await mkdtemp(path.join(os.tmpdir(), 'episodic-gitea-push-'));
    let head = '';
    try {
      const git = (args: string[]) => runGit(work, args, gitAuthEnv(alice.name, alice.token));
      await git(['init', '-q', '-b', 'main']);
      await writeFile(path.join(work, 'README.md'), '# widgets\n');
      await git(['add', 'README.md']);
      await git(['-c', 'user.name=Alice', '-c', 'user.email=alice@example.invalid', 'commit', '-q', '-m', 'first']);
      head = (await git(['rev-parse', 'HEAD'])).trim();
      const out = await git(['push', gitea.cloneUrl(owner, repo), 'main']);
      assert.ok(!out.includes(alice.token), 'git printed the token');
    } finally {
      await rm(work, { recursive: true, force: true });
    }
    const branch = await gitea.waitForBranch(owner, repo, 'main');
    assert.equal(branch.commit.message.trim(), 'first');
    assert.equal(branch.commit.id, head);
  });

  it('knows issues, labels and comment authors; filters lists by labels= and since=', async () => {
    const label = await gitea.createLabel(owner, repo, 'agent');
    labelled = await gitea.createIssue(
      owner,
      repo,
      { title: 'Fix it', body: 'please', labels: [label.id] },
      alice.token,
    );
    plain = await gitea.createIssue(owner, repo, { title: 'Unrelated' });
    assert.deepEqual(
      labelled.labels.map((l) => l.name),
      ['agent'],
    );

    const comment = await gitea.comment(owner, repo, labelled.number, '/episodic go', alice.token);
    const comments = await gitea.listComments(owner, repo, labelled.number);
    assert.deepEqual(
      comments.map((c) => [c.user.login, c.body]),
      [['alice', '/episodic go']],
    );

    const byLabel = await gitea.listIssues(owner, repo, { labels: 'agent' });
    assert.deepEqual(
      byLabel.map((i) => i.number),
      [labelled.number],
    );
    // A label name the repo does not have switches the filter off instead of matching nothing.
    const unknownLabel = await gitea.listIssues(owner, repo, { labels: 'no-such-label' });
    assert.deepEqual(unknownLabel.map((i) => i.number).sort(), [labelled.number, plain.number].sort());

    // A comment bumps the issue's updated_at, so since= finds issues that only got a comment.
    const afterComment = await gitea.getIssue(owner, repo, labelled.number);
    assert.ok(Date.parse(afterComment.updated_at) >= Date.parse(comment.created_at));
    await assertSinceFilter(gitea, owner, repo, comment.created_at);
    const future = new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    assert.deepEqual(await gitea.listIssues(owner, repo, { since: future }), []);
  });

  it('sends no ETag or Last-Modified on issue lists and answers conditional requests with 200', async () => {
    const first = await gitea.request('GET', `/repos/${owner}/${repo}/issues`);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('etag'), null);
    assert.equal(first.headers.get('last-modified'), null);
    assert.equal(first.headers.get('x-total-count'), '2');
    await first.body?.cancel();
    const conditional = await gitea.request('GET', `/repos/${owner}/${repo}/issues`, {
      headers: { 'if-none-match': '*', 'if-modified-since': new Date(Date.now() + 60_000).toUTCString() },
    });
    assert.equal(conditional.status, 200);
    assert.equal(((await conditional.json()) as unknown[]).length, 2);
  });

  it("reports each user's permission on the repo", async () => {
    const levels = await Promise.all(
      [owner, alice.name, outsider.name].map(async (u) => (await gitea.permission(owner, repo, u)).permission),
    );
    assert.deepEqual(levels, ['owner', 'write', 'read']);
  });

  it('delivers a webhook to 127.0.0.1 signed with X-Gitea-Signature', async () => {
    const secret = 'webhook-secret-for-tests';
    const listener = await startListener();
    try {
      await gitea.createWebhook(owner, repo, { url: listener.url, secret });
      await gitea.comment(owner, repo, labelled.number, 'second comment', outsider.token);
      const delivery = await listener.next((d) => d.headers['x-gitea-event'] === 'issue_comment');
      const signature = String(delivery.headers['x-gitea-signature']);
      assert.ok(signatureMatches(secret, delivery.body, signature), 'signature does not verify');
      assert.ok(!signatureMatches('another-secret', delivery.body, signature));
      assert.match(String(delivery.headers['x-gitea-delivery']), /^[0-9a-f-]{36}$/);
      const payload = JSON.parse(delivery.body.toString('utf8'));
      assert.deepEqual(
        [payload.action, payload.issue.number, payload.comment.user.login, payload.comment.body],
        ['created', labelled.number, 'outsider', 'second comment'],
      );
    } finally {
      await listener.close();
    }
  });

  it('stop() ends the process group and removes the temp dir', async () => {
    await gitea.stop();
    assert.equal(existsSync(gitea.dir), false);
    assert.equal(existsSync(`/proc/${gitea.pid}`), false);
    await assert.rejects(fetch(`${gitea.url}/api/v1/version`));
  });
});

/** Every returned issue was updated at or after `since` (inclusive, whole seconds); every other one before. */
async function assertSinceFilter(gitea: Gitea, owner: string, repo: string, since: string): Promise<void> {
  const all = await gitea.listIssues(owner, repo);
  const filtered = new Set((await gitea.listIssues(owner, repo, { since })).map((i) => i.number));
  assert.ok(filtered.size > 0);
  for (const issue of all) {
    const atOrAfter = Date.parse(issue.updated_at) >= Date.parse(since);
    assert.equal(filtered.has(issue.number), atOrAfter, `#${issue.number} updated ${issue.updated_at}`);
  }
}

function signatureMatches(secret: string, body: Buffer, signature: string): boolean {
  const expected = Buffer.from(createHmac('sha256', secret).update(body).digest('hex'));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

async function startListener() {
  const deliveries: Delivery[] = [];
  const waiters: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.end('ok');
      for (const wake of waiters.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const next = async (match: (d: Delivery) => boolean, timeoutMs = 30_000): Promise<Delivery> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = deliveries.find(match);
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(`no matching delivery in ${timeoutMs} ms (${deliveries.length} others)`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 1000);
      });
    }
  };
  const close = () => new Promise((resolve) => server.close(resolve));
  return { url: `http://127.0.0.1:${port}/hook`, next, close };
}

async function runGit(cwd: string, args: string[], env: Record<string, string>): Promise<string> {
  const { stdout, stderr } = await execFileAsync('git', args, {
    cwd,
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return stdout + stderr;
}
