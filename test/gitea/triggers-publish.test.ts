// The full item lifecycle locally against the real Gitea, through `episodic run --watch`: a labelled issue →
// one task whose git workspace is the repo on branch episodic/1 → a stand-in agent that changes a file (the
// checkpoint commits it, the episode pushes it) → the report comment edited as the task moves (Running, then
// Succeeded) → one PR from episodic/1 that closes the issue, recorded in status.pullRequests. A restart
// (`run` again) creates no second task, PR or comment.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Gitea, type GiteaAccount, startGitea } from '../support/gitea.ts';
import { CLI, FAKE_CLAUDE, NODE, runCli, tempDir } from '../support/local.ts';
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
    // The episodes' git uses the user's own credentials locally: here a global config with the bot's header.
    const gitConfig = join(dir, 'gitconfig');
    const basic = Buffer.from(`${OWNER}:${gitea.adminToken}`).toString('base64');
    writeFileSync(
      gitConfig,
      `[http]\n\textraHeader = Authorization: Basic ${basic}\n[user]\n\tname = Test\n\temail = test@example.invalid\n`,
    );
    env = { TEST_GITEA_TOKEN: gitea.adminToken, GIT_CONFIG_GLOBAL: gitConfig };
    // Slow enough to be seen Running; its change is the work the PR carries.
    const script = join(dir, 'agent.json');
    writeFileSync(
      script,
      JSON.stringify({ default: { mode: 'success', delayMs: 2500, writeFiles: { 'FIX.md': 'fixed #1\n' } } }),
    );
    writeFileSync(
      join(dir, 'pub.yaml'),
      `apiVersion: episodic.dev/v1alpha1
kind: AgentTrigger
metadata:
  name: pub
spec:
  source:
    gitea:
      apiURL: ${gitea.url}
      repo: ${OWNER}/${REPO}
      labels: [agent]
      pollSeconds: 3600
      tokenEnv: TEST_GITEA_TOKEN
  report:
    comment: true
    labels: {running: 'episodic:running', done: 'episodic:done'}
    pullRequest: {titleTemplate: 'episodic: {{item.title}}'}
  template:
    spec:
      prompt: 'Fix #{{item.number}} <promise>COMPLETE</promise>'
      workspace: {git: {url: '${gitea.cloneUrl(OWNER, REPO)}', ref: main}}
      agent:
        command: [${JSON.stringify(NODE)}, ${JSON.stringify(FAKE_CLAUDE)}, ${JSON.stringify(`--fake-script=${script}`)}]
        output: claude
      limits: {maxEpisodes: 2, episodeTimeoutSeconds: 60}
`,
    );
  });
  after(async () => {
    await gitea?.stop();
  });

  it('labelled issue → task → commit pushed to episodic/1 → one PR closing it; the comment follows the task', async () => {
    const child = spawn(NODE, [CLI, 'run', dir, '--watch', '--no-table'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise((r) => child.on('exit', r));
    const explain = (err: unknown) => {
      const status = existsSync(statusFile) ? readFileSync(statusFile, 'utf8') : '(no status)';
      throw new Error(`${(err as Error).message}\n${status}\n${stderr.slice(-3000)}`);
    };
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
      child.kill('SIGTERM');
      await exited;
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
