// The merge queue lands a task that has a pull request through the forge's merge API (real Gitea, local
// `episodic run --watch`): a trigger's task with spec.integrate opens its PR, `main` moves meanwhile, the queue
// rebases the branch, leases the PR's head to the rebased commit and merges it fast-forward-only; the PR shows
// merged and `main` is linear with the work once. A merge style the repo refuses → NeedsReview with the forge's
// reason (no token anywhere). kill -9 once Gitea has merged but before the controller heard (a proxy in front
// of the API holds the merge's answer) → the restart finishes it without a second merge call.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Gitea, startGitea } from '../support/gitea.ts';
import { triggerRunEnv, watchRun, writePublishTrigger } from '../support/gitea-trigger.ts';
import { readStatus, runCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OWNER = 'episodic-admin';
const INTEGRATE = '      integrate: {into: main, queue: q}\n';
// `into` is the template's own ref: each item's task works on episodic/NUMBER (what the into rule compares),
// its PR based on the template's ref, main.
const TEMPLATE = { templateSpec: INTEGRATE, templateRef: 'main' };

interface Pull {
  number: number;
  state: string;
  merged: boolean;
  head: { ref: string; sha: string };
}

describe('the merge queue merges a task with a PR through the Gitea API (real Gitea, local)', () => {
  let gitea: Gitea;

  before(async () => {
    gitea = await startGitea();
  });
  after(async () => {
    await gitea?.stop();
  });

  /** A repo with a labelled issue and a trigger whose task integrates into main; its run dir and env. */
  async function setup(repo: string, apiURL?: string) {
    await gitea.createRepo(OWNER, repo, { autoInit: true });
    const agent = await gitea.createLabel(OWNER, repo, 'agent');
    await gitea.createIssue(OWNER, repo, { title: 'Add a fix', body: 'please', labels: [agent.id] });
    const dir = tempDir();
    const env = triggerRunEnv(dir, gitea, OWNER);
    const files = { 'FIX.md': 'fixed #1\n' };
    writePublishTrigger(dir, {
      name: 'mq',
      gitea,
      owner: OWNER,
      repo,
      writeFiles: files,
      apiURL,
      delayMs: 4000,
      ...TEMPLATE,
    });
    return { dir, env, statusFile: join(dir, '.episodic/triggers/default/mq.json') };
  }

  /** The one PR (issues and PRs share Gitea's numbers: the issue is #1, its PR #2). */
  const pull = async (repo: string) => {
    const pulls = await gitea.api<Pull[]>('GET', `/repos/${OWNER}/${repo}/pulls`, { query: { state: 'all' } });
    assert.equal(pulls.length, 1, 'one PR');
    return pulls[0] as Pull;
  };
  const task = (dir: string) => readStatus(dir, 'mq-1')?.status;
  const settled = (dir: string) => {
    const r = task(dir)?.integrate?.result;
    return r === 'integrated' || r === 'needsReview' ? task(dir) : undefined;
  };

  /** main as a fresh clone sees it: its subjects newest first, merges on it, commits touching FIX.md. */
  function mainHistory(repo: string, env: Record<string, string>) {
    const dir = tempDir();
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: dir, env: { ...process.env, ...env }, encoding: 'utf8' }).trim();
    git('clone', '--quiet', '--branch', 'main', gitea.cloneUrl(OWNER, repo), 'c');
    const inClone = (...args: string[]) => git('-C', 'c', ...args);
    return {
      head: inClone('rev-parse', 'HEAD'),
      merges: inClone('rev-list', '--merges', 'HEAD'),
      fixCommits: inClone('rev-list', 'HEAD', '--', 'FIX.md').split('\n').filter(Boolean).length,
      other: existsSync(join(dir, 'c', 'OTHER.md')),
    };
  }

  it('a task with a PR: rebased onto the moved main, merged through the API, main linear with it once', async () => {
    const repo = 'mq-merged';
    const { dir, env, statusFile } = await setup(repo);
    const { explain, stop } = watchRun(dir, env, statusFile);
    try {
      await waitFor('the task running', () => task(dir)?.phase === 'Running', 60_000).catch(explain);
      // main moves while the agent works: the queue has a real rebase to do.
      await gitea.api('POST', `/repos/${OWNER}/${repo}/contents/OTHER.md`, {
        body: { content: Buffer.from('other\n').toString('base64'), branch: 'main', message: 'other work' },
      });
      const st = await waitFor('the queue done with it', () => settled(dir), 120_000).catch(explain);
      assert.equal(st.integrate?.result, 'integrated', JSON.stringify(st.integrate));
      assert.equal(st.phase, 'Succeeded');
      const pr = await pull(repo);
      assert.equal(pr.merged, true, 'the PR shows merged');
      assert.equal(st.integrate?.pullRequest, pr.number);
      const main = mainHistory(repo, env);
      assert.equal(main.merges, '', 'no merge commit on main');
      assert.equal(main.fixCommits, 1, "the task's commit once on main");
      assert.equal(main.other, true, 'the commit main got meanwhile is kept');
      assert.equal(main.head, st.integrate?.commit, 'main is the rebased commit (a fast-forward)');
      assert.equal(pr.head.sha, main.head, "the PR's head was leased to the rebased commit");
      const got = await runCli(['get', 'mq-1', dir], { env });
      assert.match(got.stdout, new RegExp(`\\nMerge queue q: integrated at \\w{12} \\(pull request #${pr.number}\\);`));
    } finally {
      await stop();
    }
  });

  it('the forge refuses the merge → NeedsReview with its reason; the PR stays open, main untouched', async () => {
    const repo = 'mq-refused';
    const { dir, env, statusFile } = await setup(repo);
    await gitea.api('PATCH', `/repos/${OWNER}/${repo}`, { body: { allow_fast_forward_only_merge: false } });
    const { explain, stop, stderr } = watchRun(dir, env, statusFile);
    try {
      const st = await waitFor('the queue done with it', () => settled(dir), 120_000).catch(explain);
      assert.equal(st.integrate?.result, 'needsReview', JSON.stringify(st.integrate));
      assert.equal(st.phase, 'NeedsReview');
      assert.equal(st.reason, 'IntegrationFailed');
      assert.match(st.message ?? '', /merge queue q: the forge refused to merge pull request #2: gitea POST .*-> 405/);
      assert.match(st.integrate?.forge ?? '', /405/, st.message);
      const got = await runCli(['get', 'mq-1', dir], { env });
      assert.match(got.stdout, /\nMerge queue q: needsReview \(pull request #2\);.*\n {2}forge refused: .*405/);
      assert.equal((await pull(repo)).state, 'open');
      assert.equal(mainHistory(repo, env).fixCommits, 0);
      const statusText = readFileSync(join(dir, '.episodic/status/default/mq-1.json'), 'utf8');
      assert.ok(!statusText.includes(gitea.adminToken), 'the token is not in status');
      assert.ok(!stderr().includes(gitea.adminToken), 'the token is not in the log');
    } finally {
      await stop();
    }
  });

  it('without --watch: the run ends with the task waiting for its PR (opened after the run); the next run merges it', async () => {
    const repo = 'mq-runs';
    const { dir, env } = await setup(repo);
    const first = await runCli(['run', dir, '--no-table'], { env, timeoutMs: 120_000 });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(task(dir)?.phase, 'Succeeded');
    assert.equal(task(dir)?.integrate, undefined, 'it waited for the PR, neither pushed nor merged');
    assert.equal((await pull(repo)).state, 'open', "the trigger's report opened the PR after the run");
    const second = await runCli(['run', dir, '--no-table'], { env, timeoutMs: 120_000 });
    assert.equal(second.code, 0, second.stderr);
    assert.equal(task(dir)?.integrate?.result, 'integrated', JSON.stringify(task(dir)?.integrate));
    assert.equal((await pull(repo)).merged, true);
    assert.equal(mainHistory(repo, env).fixCommits, 1);
  });

  it('main moves between the rebase and the merge call → Gitea will not fast-forward: rebased again, merged', async () => {
    const repo = 'mq-moved';
    const late = { content: Buffer.from('late\n').toString('base64'), branch: 'main', message: 'late work' };
    const moveMain = () => gitea.api('POST', `/repos/${OWNER}/${repo}/contents/LATE.md`, { body: late });
    const proxy = await holdingProxy(gitea.url, undefined, moveMain);
    try {
      const { dir, env, statusFile } = await setup(repo, proxy.url);
      const { explain, stop } = watchRun(dir, env, statusFile);
      try {
        const st = await waitFor('the queue done with it', () => settled(dir), 120_000).catch(explain);
        assert.equal(st.integrate?.result, 'integrated', JSON.stringify(st.integrate));
        assert.equal(st.integrate?.attempts, 2, 'rebased twice: before and after main moved');
        assert.equal(proxy.merges(), 2, 'the refused merge, then the one that landed');
        assert.equal((await pull(repo)).merged, true);
        const main = mainHistory(repo, env);
        assert.equal(main.merges, '');
        assert.equal(main.fixCommits, 1);
        assert.equal(main.head, st.integrate?.commit);
        assert.match(readFileSync(join(dir, '.episodic/status/default/mq-1.json'), 'utf8'), /"integrated"/);
      } finally {
        await stop();
      }
    } finally {
      proxy.close();
    }
  });

  it('kill -9 after Gitea merged, before the controller heard → the restart finishes it, merged once', async () => {
    const repo = 'mq-killed';
    const mark = join(tempDir(), 'merged');
    const proxy = await holdingProxy(gitea.url, mark);
    try {
      const { dir, env, statusFile } = await setup(repo, proxy.url);
      const first = watchRun(dir, env, statusFile);
      await waitFor('the merge answered by Gitea', () => existsSync(mark), 120_000).catch(first.explain);
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));
      assert.equal(readFileSync(mark, 'utf8'), '200', 'Gitea merged it');
      assert.notEqual(task(dir)?.integrate?.result, 'integrated', 'the killed controller never heard');
      proxy.release();
      const second = watchRun(dir, env, statusFile);
      try {
        const st = await waitFor('the restart finishing it', () => settled(dir), 120_000).catch(second.explain);
        assert.equal(st.integrate?.result, 'integrated', JSON.stringify(st.integrate));
        assert.equal(proxy.merges(), 1, 'one merge call in all');
        assert.equal((await pull(repo)).merged, true);
        const main = mainHistory(repo, env);
        assert.equal(main.fixCommits, 1);
        assert.equal(main.merges, '');
        assert.equal(main.head, st.integrate?.commit);
      } finally {
        await second.stop();
      }
    } finally {
      proxy.close();
    }
  });
});

/**
 * An HTTP proxy in front of Gitea's API that forwards everything; with `mark`, a merge call's answer, once Gitea
 * has given it, is written to `mark` and withheld (the caller waits until it is killed), until release().
 * `beforeFirstMerge` runs before the first merge call goes on (e.g. someone else moving `into` just then).
 */
async function holdingProxy(target: string, mark?: string, beforeFirstMerge?: () => Promise<unknown>) {
  let holding = mark !== undefined;
  let merges = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const isMerge = req.method === 'POST' && /\/pulls\/\d+\/merge$/.test(req.url ?? '');
    if (isMerge && ++merges === 1) await beforeFirstMerge?.();
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(
        ([k]) => !['host', 'connection', 'accept-encoding', 'content-length'].includes(k),
      ),
    ) as Record<string, string>;
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks);
    const up = await fetch(`${target}${req.url}`, { method: req.method, headers, body });
    const answer = Buffer.from(await up.arrayBuffer());
    if (isMerge && holding && mark) {
      writeFileSync(mark, String(up.status));
      return; // never answered
    }
    const keep: Record<string, string> = {};
    up.headers.forEach((v, k) => {
      if (!['content-encoding', 'content-length', 'transfer-encoding', 'connection'].includes(k)) keep[k] = v;
    });
    res.writeHead(up.status, keep);
    res.end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    merges: () => merges,
    release: () => {
      holding = false;
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
