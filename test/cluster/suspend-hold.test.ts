// The suspend hold on a cluster, against the real apiserver: the console's Suspend / Unsuspend (served by
// `episodic controller --console-listen`, in headless Chromium) and `episodic suspend --kubeconfig` set the
// episodic.dev/suspended annotation, never spec; the controller stops the episode, says who suspended the
// task, starts the next one once the hold is lifted, and audits both.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { launchBrowser, screenshot } from '../support/browser.ts';
import { kubeconfigPath, kubectl, skipCluster } from '../support/cluster.ts';
import {
  MAIN,
  NODE,
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  fakeClaudeSpec,
  getTask,
  startControllerProcess,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import { tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

function episodic(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(NODE, [MAIN, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('cluster suspend hold', { skip: skipCluster, timeout: 180_000 }, () => {
  it('Suspend and Unsuspend in the console set the annotation, never spec; the episode stops and the next starts; both audited', async () => {
    const cluster = await clusterWithCrd();
    const ns = await createNamespace('hold');
    const client = await testClient(cluster);
    const ctl = await startControllerProcess(cluster, ['--namespace', ns, '--console-listen', '127.0.0.1:0']);
    const browser = await launchBrowser();
    try {
      const url = await waitFor('the console', () =>
        (ctl.logs.find((l) => l.msg === 'serving the console')?.url as string | undefined)?.replace(/\/$/, ''),
      );
      await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'held', fakeClaudeSpec()) });
      await waitForPod(client, ns, 'held-ep-1');
      const before = await waitForTask(client, ns, 'held', (s) => s.phase === 'Running');
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${url}/#/task/${ns}/held`);
      await page.waitForSelector('[data-testid=phase]:text("Running")');
      page.on('dialog', (d) => void d.accept());
      await page.click('[data-testid=suspend]');
      await page.waitForSelector('[data-testid=action-result]:text("suspend requested by")');
      await page.waitForSelector('[data-testid=phase]:text("Suspended")');
      const suspended = await waitForTask(client, ns, 'held', (s) => s.lastEpisode?.outcome === 'cancelled');
      assert.equal(suspended.metadata.annotations?.['episodic.dev/suspended'], 'true');
      assert.match(suspended.metadata.annotations?.['episodic.dev/suspended-by'], /^.+ via console$/);
      assert.match(suspended.status.message, /^task is suspended by .+ via console$/);
      assert.deepEqual(suspended.spec, before.spec);
      assert.equal(suspended.metadata.generation, before.metadata.generation);
      await page.waitForSelector('[data-testid=unsuspend]');

      await page.click('[data-testid=unsuspend]');
      await waitForPod(client, ns, 'held-ep-2');
      await page.waitForSelector('[data-testid=audit] td:text("Unsuspended")');
      const lifted = await getTask(client, ns, 'held');
      assert.equal(lifted?.metadata.annotations?.['episodic.dev/suspended'], 'false');
      assert.deepEqual(
        lifted?.status.audit.map((a: { action: string }) => a.action),
        ['Suspended', 'Unsuspended'],
      );
      for (const a of lifted?.status.audit ?? []) assert.match(a.by, /^user:.+ via console$/);
      await screenshot(page, tempDir(), 'cluster-unsuspended.png');
    } finally {
      await browser.close();
      await ctl.kill('SIGINT');
      client.close();
    }
  });

  it('`episodic suspend --kubeconfig` holds a task the spec does not suspend; `unsuspend` lifts it', async () => {
    const cluster = await clusterWithCrd();
    const ns = await createNamespace('hold-cli');
    const client = await testClient(cluster);
    const ctl = await startControllerProcess(cluster, ['--namespace', ns]);
    try {
      await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'other', fakeClaudeSpec()) });
      await waitForPod(client, ns, 'other-ep-1');
      const cli = ['--kubeconfig', kubeconfigPath, '-n', ns, '--by', 'dave'];
      const held = await episodic(['suspend', 'other', ...cli]);
      assert.equal(held.code, 0, held.stderr);
      assert.match(
        held.stdout,
        new RegExp(`^suspend hold set on ${ns}/other by dave \\(annotation episodic.dev/suspended\\)`),
      );
      await waitForTask(
        client,
        ns,
        'other',
        (s) => s.phase === 'Suspended' && s.message === 'task is suspended by dave',
      );
      const lifted = await episodic(['unsuspend', 'other', ...cli]);
      assert.equal(lifted.code, 0, lifted.stderr);
      await waitForPod(client, ns, 'other-ep-2');
      const task = await waitForTask(client, ns, 'other', (s) => s.audit?.length === 2);
      assert.deepEqual(
        task.status.audit.map((a: { action: string; by: string }) => [a.action, a.by]),
        [
          ['Suspended', 'user:dave'],
          ['Unsuspended', 'user:dave'],
        ],
      );
      const missing = await episodic(['suspend', 'nope', ...cli]);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, new RegExp(`AgentTask ${ns}/nope not found`));
    } finally {
      await ctl.kill('SIGINT');
      client.close();
    }
  });
});
