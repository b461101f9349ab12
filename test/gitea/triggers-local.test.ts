// A Gitea issue trigger end to end against the real Gitea, through `episodic run`: a labelled issue → one
// task; a command comment from a user with write → one task; the same command from a reader → nothing; an
// issue the token's own user labelled → a task (loop prevention is episodic's report marker, issue 28); a second run (a restart) → no duplicate; a newer command on a finished
// item → its next task. The token comes from the environment and appears nowhere the controller writes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Gitea, type GiteaAccount, startGitea } from '../support/gitea.ts';
import { cliEntry } from '../support/cli-entry.ts';
import { FAKE_CLAUDE, NODE, readStatus, runCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OWNER = 'episodic-admin';
const REPO = 'widgets';

function triggerYaml(apiURL: string): string {
  return `apiVersion: episodic.dev/v1alpha1
kind: AgentTrigger
metadata:
  name: fix
spec:
  source:
    gitea:
      apiURL: ${apiURL}
      repo: ${OWNER}/${REPO}
      labels: [agent]
      command: {text: /episodic, minPermission: write}
      tokenEnv: TEST_GITEA_TOKEN
  maxConcurrency: 5
  report: {comment: true}
  template:
    spec:
      prompt: 'Fix #{{item.number}} {{item.title}}: {{item.body}} / {{item.comment}} <promise>COMPLETE</promise>'
      agent:
        command: [${JSON.stringify(NODE)}, ${JSON.stringify(FAKE_CLAUDE)}, --fake-mode=success]
        output: claude
      limits: {maxEpisodes: 2, episodeTimeoutSeconds: 30}
`;
}

describe('a Gitea trigger in local mode (real Gitea)', () => {
  let gitea: Gitea;
  let alice: GiteaAccount;
  let reader: GiteaAccount;
  const dir = tempDir();
  const run = () =>
    runCli(['run', dir, '--no-table', '--metrics-file', join(dir, 'metrics.prom')], {
      env: { TEST_GITEA_TOKEN: gitea.adminToken },
      timeoutMs: 120_000,
    });
  const created = () =>
    readdirSync(join(dir, '.episodic/created/default'))
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => f.replace(/\.yaml$/, ''))
      .sort();
  const manifest = (name: string) =>
    JSON.parse(readFileSync(join(dir, `.episodic/created/default/${name}.yaml`), 'utf8')) as {
      spec: { prompt: string };
      metadata: { labels: Record<string, string> };
    };

  /** The controller's report comments on an item (the admin token is its user). */
  const reports = async (number: number) =>
    (
      await gitea.api<Array<{ body: string; user: { login: string } }>>(
        'GET',
        `/repos/${OWNER}/${REPO}/issues/${number}/comments`,
      )
    )
      .filter((c) => c.user.login === OWNER && c.body.startsWith('<!-- episodic:report'))
      .map((c) => c.body);
  const forgeRequests = () =>
    [...readFileSync(join(dir, 'metrics.prom'), 'utf8').matchAll(/^episodic_forge_requests_total\{[^}]*\} (\d+)$/gm)]
      .map((m) => Number(m[1]))
      .reduce((x, y) => x + y, 0);

  before(async () => {
    gitea = await startGitea();
    alice = await gitea.createUser('alice');
    reader = await gitea.createUser('reader');
    const outsider = await gitea.createUser('outsider');
    await gitea.createRepo(OWNER, REPO);
    await gitea.addCollaborator(OWNER, REPO, alice.name, 'write');
    await gitea.addCollaborator(OWNER, REPO, reader.name, 'read');
    const agent = await gitea.createLabel(OWNER, REPO, 'agent');
    // #1 labelled by alice; #2 unlabelled, a reader asks; #3 by an outsider, alice (write) asks;
    // #4 labelled, opened by the token's own user (a personal token): it triggers like anyone's (issue 28).
    await gitea.createIssue(OWNER, REPO, { title: 'Crash', body: 'it crashes', labels: [agent.id] }, alice.token);
    const two = await gitea.createIssue(OWNER, REPO, { title: 'Typo', body: 'a typo' }, alice.token);
    await gitea.comment(OWNER, REPO, two.number, '/episodic please', reader.token);
    const three = await gitea.createIssue(OWNER, REPO, { title: 'Slow', body: 'too slow' }, outsider.token);
    await gitea.comment(OWNER, REPO, three.number, '/episodic go fast', alice.token);
    await gitea.createIssue(OWNER, REPO, { title: 'Mine', body: 'by the bot', labels: [agent.id] });
    writeFileSync(join(dir, 'fix.yaml'), triggerYaml(gitea.url));
  });
  after(async () => {
    await gitea?.stop();
  });

  it("creates one task per matching item and runs it, the token user's own issue too; nothing for a reader", async () => {
    const res = await run();
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(created(), ['fix-1', 'fix-3', 'fix-4']);
    for (const name of ['fix-1', 'fix-3', 'fix-4'])
      assert.equal(readStatus(dir, name)?.status.phase, 'Succeeded', name);
    assert.equal(manifest('fix-1').spec.prompt, 'Fix #1 Crash: it crashes /  <promise>COMPLETE</promise>');
    assert.equal(
      manifest('fix-3').spec.prompt,
      'Fix #3 Slow: too slow / /episodic go fast <promise>COMPLETE</promise>',
    );
    assert.equal(manifest('fix-3').metadata.labels['episodic.dev/trigger-item'], '3');
    const status = JSON.parse(readFileSync(join(dir, '.episodic/triggers/default/fix.json'), 'utf8'));
    assert.equal(status.tasksCreated, 3);
    assert.equal(status.itemsSeen, 4);
    assert.equal(status.lastError, undefined);
    assert.ok(status.cursor, 'since= of the next poll');
    const [report] = await reports(1);
    assert.match(report, /^<!-- episodic:report fix\/fix-1 -->\n\*\*episodic\*\* task `fix-1`: \*\*Succeeded\*\*/);
    assert.equal((await reports(1)).length, 1);
    assert.equal((await reports(2)).length, 0, 'no task, no report');
    const metrics = readFileSync(join(dir, 'metrics.prom'), 'utf8');
    assert.match(metrics, /episodic_trigger_tasks_created_total\{namespace="default",trigger="fix"\} 3/);
    assert.match(metrics, /episodic_forge_requests_total\{forge="gitea",code="200"\} \d+/);
    for (const text of [res.stdout, res.stderr, JSON.stringify(status), metrics, JSON.stringify(manifest('fix-1'))])
      assert.ok(!text.includes(gitea.adminToken), 'the token leaked');
  });

  it('a restart creates nothing twice; a newer command on a finished item runs it again as -2', async () => {
    const again = await run();
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(created(), ['fix-1', 'fix-3', 'fix-4']);
    // The controller's own report edits bumped the items once; after that nothing changed: one request, the
    // list with since= (no 'who am I' since issue 28; what was handled at the cursor is not fetched again).
    const idle = await run();
    assert.equal(idle.code, 0, idle.stderr);
    assert.equal(forgeRequests(), 1);
    await gitea.comment(OWNER, REPO, 1, '/episodic', reader.token);
    const readerAsks = await run();
    assert.equal(readerAsks.code, 0, readerAsks.stderr);
    assert.deepEqual(created(), ['fix-1', 'fix-3', 'fix-4'], 'a reader cannot re-run it');
    await gitea.comment(OWNER, REPO, 1, '/episodic once more', alice.token);
    const aliceAsks = await run();
    assert.equal(aliceAsks.code, 0, aliceAsks.stderr);
    assert.deepEqual(created(), ['fix-1', 'fix-1-2', 'fix-3', 'fix-4']);
    assert.equal(readStatus(dir, 'fix-1-2')?.status.phase, 'Succeeded');
    assert.match(manifest('fix-1-2').spec.prompt, /\/episodic once more/);
    const onOne = await reports(1);
    // Issue 28: a re-run edits the item's one report comment (keyed by its first task) instead of posting another.
    assert.equal(onOne.length, 1, 'one report per item, edited in place by the re-run');
    assert.ok(onOne[0].startsWith('<!-- episodic:report fix/fix-1 -->'), onOne[0]);
    assert.ok(onOne[0].includes('fix-1-2') && onOne[0].includes('**Succeeded**'), onOne[0]);
  });

  it('run --watch: a signed Gitea delivery wakes the poll at once; a bad or missing signature is 401', async () => {
    await gitea.createRepo(OWNER, 'gadgets');
    await gitea.addCollaborator(OWNER, 'gadgets', alice.name, 'write'); // else her labels are dropped
    const agent = await gitea.createLabel(OWNER, 'gadgets', 'agent');
    const hookDir = tempDir();
    // A poll a day: only a delivery can make the task appear within the test.
    writeFileSync(
      join(hookDir, 'hooked.yaml'),
      triggerYaml(gitea.url)
        .replace('name: fix', 'name: hooked')
        .replace(
          `repo: ${OWNER}/${REPO}`,
          `repo: ${OWNER}/gadgets\n      pollSeconds: 86400\n      webhook: {secretEnv: TEST_HOOK_SECRET}`,
        ),
    );
    const port = await freePort();
    const child = spawn(
      NODE,
      [
        cliEntry(),
        'run',
        hookDir,
        '--watch',
        '--no-table',
        '--log-format',
        'json',
        '--hooks-addr',
        `127.0.0.1:${port}`,
        '--log-level',
        'debug',
      ],
      {
        env: { ...process.env, TEST_GITEA_TOKEN: gitea.adminToken, TEST_HOOK_SECRET: 'hook-secret' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise((r) => child.on('exit', r));
    try {
      const statusFile = join(hookDir, '.episodic/triggers/default/hooked.json');
      const first = await waitFor(
        'the first poll',
        () => existsSync(statusFile) && JSON.parse(readFileSync(statusFile, 'utf8')),
      );
      const url = `http://127.0.0.1:${port}/hooks/default/hooked`;
      const body = JSON.stringify({ action: 'opened' });
      const post = (headers: Record<string, string>) =>
        fetch(url, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'x-gitea-event': 'issues', ...headers },
        });
      assert.equal((await post({})).status, 401, 'no signature');
      assert.equal((await post({ 'x-gitea-signature': 'ab'.repeat(32) })).status, 401, 'wrong signature');
      const signed = createHmac('sha256', 'wrong-secret').update(body).digest('hex');
      assert.equal((await post({ 'x-gitea-signature': signed })).status, 401, 'signed with another secret');
      assert.equal(JSON.parse(readFileSync(statusFile, 'utf8')).lastPollAt, first.lastPollAt, 'no poll woken');

      await gitea.createWebhook(OWNER, 'gadgets', { url, secret: 'hook-secret' });
      await gitea.createIssue(
        OWNER,
        'gadgets',
        { title: 'Hooked', body: 'via webhook', labels: [agent.id] },
        alice.token,
      );
      const task = join(hookDir, '.episodic/created/default/hooked-1.yaml');
      await waitFor('the task a delivery woke', () => existsSync(task), 30_000).catch((err) => {
        throw new Error(`${(err as Error).message}\n${readFileSync(statusFile, 'utf8')}\n${stderr.slice(-3000)}`);
      });
      assert.match(readFileSync(task, 'utf8'), /Fix #1 Hooked: via webhook/);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
  it('source.webhook: Gitea’s own signed delivery creates exactly one task; a hook with the wrong secret none', async () => {
    await gitea.createRepo(OWNER, 'gizmos');
    await gitea.addCollaborator(OWNER, 'gizmos', alice.name, 'write');
    const agent = await gitea.createLabel(OWNER, 'gizmos', 'agent');
    const hookDir = tempDir();
    const webhookTrigger = (name: string, secretEnv: string) => `apiVersion: episodic.dev/v1alpha1
kind: AgentTrigger
metadata:
  name: ${name}
spec:
  source:
    webhook: {forge: gitea, repo: ${OWNER}/gizmos, labels: [agent], secretEnv: ${secretEnv}}
  template:
    spec:
      prompt: 'Hooked #{{item.number}} {{item.title}} <promise>COMPLETE</promise>'
      agent:
        command: [${JSON.stringify(NODE)}, ${JSON.stringify(FAKE_CLAUDE)}, --fake-mode=success]
        output: claude
`;
    writeFileSync(
      join(hookDir, 'hooks.yaml'),
      `${webhookTrigger('hooked', 'TEST_HOOK_SECRET')}---\n${webhookTrigger('unhooked', 'TEST_OTHER_SECRET')}`,
    );
    const port = await freePort();
    const child = spawn(
      NODE,
      [cliEntry(), 'run', hookDir, '--watch', '--no-table', '--log-format', 'json', '--hooks-addr', String(port)],
      {
        env: { ...process.env, TEST_HOOK_SECRET: 'hook-secret', TEST_OTHER_SECRET: 'other-secret' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise((r) => child.on('exit', r));
    const outcomes = () =>
      stderr
        .split('\n')
        .filter((l) => l.includes('"msg":"webhook delivery'))
        .map((l) => JSON.parse(l) as { trigger: string; status: number; reason: string });
    try {
      await waitFor('serving webhooks', () => stderr.includes('"msg":"serving webhooks"'));
      // A bare port binds the loopback, which Gitea may deliver to ([webhook] ALLOWED_HOST_LIST = loopback).
      const url = `http://127.0.0.1:${port}/hooks/default`;
      await gitea.createWebhook(OWNER, 'gizmos', { url: `${url}/hooked`, secret: 'hook-secret' });
      await gitea.createWebhook(OWNER, 'gizmos', { url: `${url}/unhooked`, secret: 'hook-secret' });
      await gitea.createIssue(
        OWNER,
        'gizmos',
        { title: 'Gizmo', body: 'via webhook', labels: [agent.id] },
        alice.token,
      );
      const hookedTask = join(hookDir, '.episodic/created/default/hooked-1.yaml');
      await waitFor(
        'the delivered task, and the refused delivery',
        () =>
          existsSync(hookedTask) &&
          outcomes().some((o) => o.trigger === 'default/unhooked' && o.status === 401 && o.reason === 'bad signature'),
        30_000,
      ).catch((err) => {
        throw new Error(`${(err as Error).message}\n${stderr.slice(-3000)}`);
      });
      assert.match(readFileSync(hookedTask, 'utf8'), /Hooked #1 Gizmo/);
      // A second event about the same item (a comment) is another delivery: the name is taken, nothing new.
      await gitea.comment(OWNER, 'gizmos', 1, 'more detail', alice.token);
      await waitFor(
        'the comment delivered',
        () => outcomes().filter((o) => o.trigger === 'default/hooked').length >= 2,
      );
      assert.deepEqual(readdirSync(join(hookDir, '.episodic/created/default')).sort(), ['hooked-1.yaml']);
      assert.ok(outcomes().every((o) => o.trigger !== 'default/unhooked' || o.status === 401));
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
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
