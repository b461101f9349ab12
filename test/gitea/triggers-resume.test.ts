// A stuck task resumed from the issue (issue 21 §2, §4), locally against the real Gitea through `episodic run
// --watch`: the agent makes no progress → NeedsReview, and the report comment says how to resume → a reader's
// `/episodic resume` does nothing → alice's (write) resumes it through the CLI's resume path (the audit
// trail names gitea:alice) → the task succeeds and the comment says so. A resume is not a re-run: no second
// task for the item.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Gitea, type GiteaAccount, startGitea } from '../support/gitea.ts';
import { cliEntry } from '../support/cli-entry.ts';
import { FAKE_CLAUDE, NODE, readStatus, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OWNER = 'episodic-admin';
const REPO = 'stuck';

describe('a /episodic resume comment resumes a NeedsReview task (real Gitea)', () => {
  let gitea: Gitea;
  let alice: GiteaAccount;
  let reader: GiteaAccount;
  const dir = tempDir();

  before(async () => {
    gitea = await startGitea();
    alice = await gitea.createUser('alice');
    reader = await gitea.createUser('reader');
    await gitea.createRepo(OWNER, REPO);
    await gitea.addCollaborator(OWNER, REPO, alice.name, 'write');
    await gitea.addCollaborator(OWNER, REPO, reader.name, 'read');
    const agent = await gitea.createLabel(OWNER, REPO, 'agent');
    await gitea.createIssue(OWNER, REPO, { title: 'Hard one', body: 'b', labels: [agent.id] }, alice.token);
    // Run 1 makes no progress (the breaker stops the task); run 2, after the resume, completes. The run
    // counter lives outside the workspace, so counting is no workspace change.
    const script = join(dir, 'agent.json');
    const steps = [{ mode: 'continue' }, { mode: 'success' }];
    writeFileSync(script, JSON.stringify({ steps, counterFile: join(dir, 'runs') }));
    writeFileSync(
      join(dir, 'stuck.yaml'),
      `apiVersion: episodic.dev/v1alpha1
kind: AgentTrigger
metadata:
  name: stuck
spec:
  source:
    gitea:
      apiURL: ${gitea.url}
      repo: ${OWNER}/${REPO}
      labels: [agent]
      command: {text: /episodic, minPermission: write}
      pollSeconds: 10
      tokenEnv: TEST_GITEA_TOKEN
  report: {comment: true}
  template:
    spec:
      prompt: 'Fix #{{item.number}}'
      agent:
        command: [${JSON.stringify(NODE)}, ${JSON.stringify(FAKE_CLAUDE)}, ${JSON.stringify(`--fake-script=${script}`)}]
        output: claude
      breaker: {noProgressEpisodes: 1, halfOpenEpisodes: 0, sameErrorEpisodes: 0}
      resume: {policy: Manual}
      backoff: {initialSeconds: 0, factor: 1, maxSeconds: 0}
      limits: {maxEpisodes: 5, episodeTimeoutSeconds: 60}
`,
    );
  });
  after(async () => {
    await gitea?.stop();
  });

  it('NeedsReview → the comment says how → a reader cannot resume, alice can → Succeeded', async () => {
    const child = spawn(NODE, [cliEntry(), 'run', dir, '--watch', '--no-table', '--log-format', 'json'], {
      env: { ...process.env, TEST_GITEA_TOKEN: gitea.adminToken },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise((r) => child.on('exit', r));
    const report = async () =>
      (await gitea.listComments(OWNER, REPO, 1)).find((c) => c.body.startsWith('<!-- episodic:report stuck/stuck-1'));
    const explain = (err: unknown) => {
      throw new Error(`${(err as Error).message}\n${stderr.slice(-3000)}`);
    };
    try {
      const stopped = await waitFor(
        'the NeedsReview comment',
        async () => (await report())?.body.includes('**NeedsReview**') && report(),
        60_000,
      ).catch(explain);
      assert.match(stopped?.body ?? '', /comment `\/episodic resume`/);
      const byReader = await gitea.comment(OWNER, REPO, 1, '/episodic resume', reader.token);
      // Seen by a poll (its log line), and refused.
      await waitFor('the reader refused', () => stderr.includes(`"comment":${byReader.id}`), 30_000).catch(explain);
      assert.equal(readStatus(dir, 'stuck-1')?.status.phase, 'NeedsReview');
      await gitea.comment(OWNER, REPO, 1, '/episodic resume', alice.token);
      await waitFor(
        'the Succeeded comment',
        async () => (await report())?.body.includes('**Succeeded**'),
        60_000,
      ).catch(explain);
      const status = readStatus(dir, 'stuck-1')?.status;
      assert.equal(status?.resume?.lastResumeBy, 'user:gitea:alice', 'the audit trail names the commenter');
      assert.equal(status?.episodes, 2);
      const created = readdirSync(join(dir, '.episodic/created/default'));
      assert.deepEqual(created, ['stuck-1.yaml'], 'a resume is not a re-run');
      assert.ok(existsSync(join(dir, 'runs')));
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
