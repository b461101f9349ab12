// The console served by `episodic controller --console-listen` links the pull request a task's trigger opened
// (AgentTrigger status.pullRequests, by the task's episodic.dev/trigger label) from its informer cache, on
// the real apiserver, live in headless Chromium; a javascript: URL stays text.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { launchBrowser, screenshot } from '../support/browser.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import { clusterWithCrd, createNamespace, fakeClaudeSpec, startControllerProcess } from '../support/kubelet.ts';
import { tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

const apply = (obj: object) => kubectl(['apply', '-f', '-'], { input: JSON.stringify(obj) });

describe('cluster console PR links', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  it("shows a task's PR from its trigger's status as a link, live; a javascript: URL as text", async () => {
    const cluster = await clusterWithCrd();
    const ns = await createNamespace('console-prs');
    const ctl = await startControllerProcess(cluster, ['--namespace', ns, '--console-listen', '127.0.0.1:0']);
    const browser = await launchBrowser();
    try {
      const url = await waitFor('the console', () =>
        (ctl.logs.find((l) => l.msg === 'serving the console')?.url as string | undefined)?.replace(/\/$/, ''),
      );
      // A suspended trigger and suspended tasks: nothing runs, only the links are looked at.
      const spec = { ...fakeClaudeSpec(), suspend: true };
      await apply({
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTrigger',
        metadata: { name: 'issues', namespace: ns },
        spec: { source: { schedule: { cron: '0 3 1 1 *' } }, suspend: true, template: { spec } },
      });
      for (const name of ['fix-1', 'fix-2'])
        await apply({
          apiVersion: 'episodic.dev/v1alpha1',
          kind: 'AgentTask',
          metadata: { name, namespace: ns, labels: { 'episodic.dev/trigger': 'issues' } },
          spec,
        });
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${url}/`);
      await page.waitForSelector(`tr[data-key="${ns}/fix-2"][data-phase="Suspended"]`);
      assert.equal(await page.locator('[data-testid=pr]').count(), 0);

      const pr = { number: 12, url: 'https://forge.example/o/r/pulls/12' };
      const pullRequests = { 'fix-1': pr, 'fix-2': { number: 13, url: 'javascript:alert(1)' } };
      await kubectl([
        ...['patch', 'agenttrigger', 'issues', '-n', ns, '--subresource=status', '--type=merge'],
        ...['-p', JSON.stringify({ status: { pullRequests } })],
      ]);
      await page.waitForSelector(`tr[data-key="${ns}/fix-1"] a[data-testid=pr][href="${pr.url}"]`);
      await page.waitForSelector(`tr[data-key="${ns}/fix-2"] span[data-testid=pr]:text("#13")`);
      assert.equal(await page.locator('main a[href^="javascript"]').count(), 0);
      await screenshot(page, tempDir(), 'cluster-fleet-prs.png');
    } finally {
      await browser.close();
      await ctl.kill('SIGINT');
    }
  });
});
