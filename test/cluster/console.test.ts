// The web console served by `episodic controller --console-listen` from its informer cache, against the real
// apiserver, in headless Chromium: the fleet and a task's episodes, its blackboard and waiting messages (hostile
// text shown as text), a status change arriving live, and Resume (the annotation `episodic resume --kubeconfig`
// sets) recorded in the audit trail.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { updateClusterBlackboard } from '../../controller/ops/cluster-blackboard.ts';
import { KubeMailboxes } from '../../controller/sinks/cluster/mailboxes.ts';
import { HOSTILE, launchBrowser, screenshot, watchedPage } from '../support/browser.ts';
import { kubectl, skipCluster } from '../support/cluster.ts';
import {
  agentTaskManifest,
  clusterWithCrd,
  createNamespace,
  FakeKubelet,
  fakeClaudeSpec,
  startControllerProcess,
  testClient,
  waitForPod,
  waitForTask,
} from '../support/kubelet.ts';
import { tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';

describe('cluster console', { skip: skipCluster, timeout: SUITE_HANG_GUARD_MS }, () => {
  it('shows the fleet and a task from the informer cache, its blackboard and mailbox, a live status change, and audits a Resume', async () => {
    const cluster = await clusterWithCrd();
    const ns = await createNamespace('console');
    const client = await testClient(cluster);
    const kubelet = new FakeKubelet(client);
    const ctl = await startControllerProcess(cluster, ['--namespace', ns, '--console-listen', '127.0.0.1:0']);
    const browser = await launchBrowser();
    try {
      const url = await waitFor('the console', () =>
        (ctl.logs.find((l) => l.msg === 'serving the console')?.url as string | undefined)?.replace(/\/$/, ''),
      );
      const spec = fakeClaudeSpec({
        backoff: { initialSeconds: 0, factor: 1, maxSeconds: 0 },
        breaker: { noProgressEpisodes: 1, halfOpenEpisodes: 0, sameErrorEpisodes: 0 },
        resume: { policy: 'Manual' },
        limits: { maxEpisodes: 3, episodeTimeoutSeconds: 600, maxCostUSD: 1 },
      });
      await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'stuck', spec) });
      const pod = await waitForPod(client, ns, 'stuck-ep-1');
      const page = await watchedPage(browser);
      await page.goto(`${url}/`);
      await page.waitForSelector(`tr[data-key="${ns}/stuck"]`);
      await kubelet.runEpisode(pod, { env: { FAKE_AGENT_MODE: 'continue' } });
      // The page was open before the episode ended: NeedsReview arrives by server-sent events.
      await page.waitForSelector(`tr[data-key="${ns}/stuck"][data-phase="NeedsReview"]`);
      assert.match(
        (await page.textContent(`tr[data-key="${ns}/stuck"] [data-testid=cost]`)) ?? '',
        /^\$0\.0123 \/ \$1\.0000$/,
      );
      await screenshot(page, tempDir(), 'cluster-fleet.png');

      // Its namespace's blackboard and a waiting message, hostile text in both, read when the page is opened.
      await updateClusterBlackboard(client, ns, (board) => ({
        board: { ...board, entries: { 'plan.owner': 'stuck', 'plan.note': `v ${HOSTILE}` } },
        value: true,
      }));
      const sent = await new KubeMailboxes(client).send(ns, 'stuck', {
        id: 'm1',
        from: `person ${HOSTILE}`,
        at: '2026-12-01T18:44:00Z',
        text: `please look ${HOSTILE}`,
      });
      assert.equal(sent.result, 'sent');
      await page.click(`a[href="#/task/${ns}/stuck"]`);
      await page.waitForSelector('[data-testid=timeline] .mark[data-outcome="continue"]');
      const board = (await page.textContent('[data-testid=blackboard]')) ?? '';
      assert.match(board, /plan\.owner\s*stuck/);
      assert.match(board, /plan\.note\s*v <script>window\.__xss='script'<\/script>/);
      const mail = (await page.textContent('[data-testid=mailbox] tr[data-message=m1]')) ?? '';
      assert.match(mail, /^2026-12-01T18:44:00Zperson <script>/);
      assert.match(mail, /please look <script>window\.__xss='script'<\/script>/);
      assert.ok(!mail.includes('\u001b'), 'terminal escapes are not passed through');
      assert.equal(await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined);
      assert.equal(await page.locator('main img, main script, main a[href^="javascript"]').count(), 0);
      assert.deepEqual(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations), []);
      page.once('dialog', (d) => void d.accept());
      await page.click('[data-testid=resume]');
      await page.waitForSelector('[data-testid=action-result]:text("resume requested by")');
      const resumed = await waitForTask(client, ns, 'stuck', (s) => s.resume?.lastResumeBy?.endsWith('via console'));
      assert.match(resumed.status.resume.lastResumeBy, /^user:.+ via console$/);
      await page.waitForSelector('[data-testid=audit] td:text("Resumed")');
      await screenshot(page, tempDir(), 'cluster-task.png');
    } finally {
      await browser.close();
      await ctl.kill('SIGINT');
      client.close();
    }
  });
});
