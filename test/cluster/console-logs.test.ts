// Episode logs in the cluster console: the page reads the agent container's log through the real pod log
// API (the apiserver proxies it to KubeletLogs, a kubelet's log endpoint serving what the real runner
// printed), rendered readably as text; the running episode's log streams into an open page; markup and
// terminal escapes in a log execute nothing; a deleted pod says so, with what the episode record kept.
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { assertHostileLogInert, HOSTILE, launchBrowser, screenshot, watchedPage } from '../support/browser.ts';
import { kubeconfigPath, kubectl, skipCluster } from '../support/cluster.ts';
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
import type { ControllerProcess } from '../support/kubelet.ts';
import { KubeletLogs } from '../support/kubelet-logs.ts';
import { runCli, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';

const ONE_EPISODE = { limits: { maxEpisodes: 1, episodeTimeoutSeconds: 600 } };

/** A Claude Code stream-json line with the assistant saying `text`. */
const said = (text: string) =>
  `${JSON.stringify({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text }] } })}\n`;

const logText = (page: import('playwright-core').Page) => page.textContent('[data-testid=log]').then((t) => t ?? '');

describe('cluster console: episode logs from the pod log API', {
  skip: skipCluster,
  timeout: SUITE_HANG_GUARD_MS,
}, () => {
  let ns: string;
  let client: KubeClient;
  let kubelet: FakeKubelet;
  let logs: KubeletLogs;
  let ctl: ControllerProcess;
  let browser: Browser;
  let url: string;

  before(async () => {
    const cluster = await clusterWithCrd();
    ns = await createNamespace('console-logs');
    client = await testClient(cluster);
    kubelet = new FakeKubelet(client);
    logs = await KubeletLogs.start(client);
    ctl = await startControllerProcess(cluster, ['--namespace', ns, '--console-listen', '127.0.0.1:0']);
    browser = await launchBrowser();
    url = await waitFor('the console', () =>
      (ctl.logs.find((l) => l.msg === 'serving the console')?.url as string | undefined)?.replace(/\/$/, ''),
    );
  });

  after(async () => {
    await browser?.close();
    await ctl?.kill('SIGINT');
    await logs?.close();
    client?.close();
  });

  /** Applies a one-episode task and runs its episode with the real runner; the pod's log is its output. */
  async function finishedEpisode(name: string, text: string) {
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, name, fakeClaudeSpec(ONE_EPISODE)) });
    const pod = await waitForPod(client, ns, `${name}-ep-1`);
    await logs.runEpisode(kubelet, pod, { env: { FAKE_AGENT_MODE: 'continue', FAKE_AGENT_TEXT: text } });
    await waitForTask(client, ns, name, (s) => s.lastEpisode?.number === 1 && !s.currentEpisode);
    return pod;
  }

  it("shows a finished episode's log, rendered readably; markup and terminal escapes in it execute nothing", async () => {
    await finishedEpisode('evil', HOSTILE);
    const page = await watchedPage(browser);
    await page.goto(`${url}/#/task/${ns}/evil`);
    await page.waitForSelector('[data-testid=log][data-state=complete]');
    await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent?.includes('[result]'));
    const log = await logText(page);
    assert.match(log, /\[init\] claude/, 'the stream-json is rendered for reading');
    assert.doesNotMatch(log, /"type":"system"/, 'not the raw JSON');
    assert.match(log, /\[result\] success · \$0\.0123/);
    await assertHostileLogInert(page, log);
    // Bounded: the apiserver passed the console's tail and byte limits on to the kubelet.
    const asked = logs.requests.find((r) => r.startsWith(`/containerLogs/${ns}/evil-ep-1/agent`)) ?? '';
    assert.match(asked, /tailLines=5000/);
    assert.match(asked, /limitBytes=4194304/);
    await screenshot(page, tempDir(), 'cluster-log.png');
    await page.close();
  });

  it("streams the running episode's log into an open page, without a reload", async () => {
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'live', fakeClaudeSpec(ONE_EPISODE)) });
    const pod = await kubelet.setRunning(await logs.bind(await waitForPod(client, ns, 'live-ep-1')));
    logs.append(pod, said('the first words, before the page opened'));
    await waitForTask(client, ns, 'live', (s) => s.currentEpisode?.number === 1);
    const page = await watchedPage(browser);
    await page.goto(`${url}/#/task/${ns}/live`);
    await page.waitForSelector('[data-testid=log][data-state=following]');
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=log]')?.textContent?.includes('the first words'),
    );
    await page.evaluate(() => {
      (window as unknown as { __sameDocument: boolean }).__sameDocument = true;
    });
    logs.append(pod, said('words written after the page opened'));
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=log]')?.textContent?.includes('words written after the page opened'),
    );
    // A second reader, then it leaves: its stream through the apiserver to the kubelet closes with the page.
    const second = await browser.newPage();
    await second.goto(`${url}/#/task/${ns}/live`);
    await second.waitForSelector('[data-testid=log][data-state=following]');
    await waitFor('two follows', () => logs.following(pod) === 2 || undefined);
    await second.close();
    await waitFor('the closed page to stop following', () => logs.following(pod) === 1 || undefined);
    // The container exits: the kubelet ends the follow, and the page's stream ends with it.
    logs.end(pod);
    await page.waitForSelector('[data-testid=log][data-state=complete]');
    assert.equal(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument), true);
    const log = await logText(page);
    assert.equal(log.match(/the first words/g)?.length, 1, 'each line once');
    assert.ok(logs.requests.some((r) => r.startsWith(`/containerLogs/${ns}/live-ep-1/agent?follow=true`)));
    await page.close();
  });

  it('says plainly when the pod is gone, and shows the last message the episode record kept', async () => {
    const pod = await finishedEpisode('pruned', 'the last words of episode one');
    await client.delete(`/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`, { gracePeriodSeconds: 0 });
    // The console reads pods from the controller's cache: wait until that has seen the deletion.
    await waitFor('the console to see the pod gone', async () => {
      const res = await fetch(`${url}/api/tasks/${ns}/pruned/episodes/1/log`);
      await res.body?.cancel();
      return res.status === 410 ? true : undefined;
    });
    const page = await watchedPage(browser);
    await page.goto(`${url}/#/task/${ns}/pruned`);
    await page.waitForSelector('[data-testid=log][data-state=gone]');
    await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent?.includes('last words'));
    const log = await logText(page);
    assert.match(log, /The pod of episode 1 \(pruned-ep-1\) is gone/);
    assert.match(log, /The episode record kept its last message:\nthe last words of episode one/);
    await page.close();
  });

  it('episodic logs --kubeconfig reads the same log: rendered, --raw, and the note when the pod is gone', async () => {
    const pod = await finishedEpisode('cli', 'words for the terminal');
    const cli = (extra: string[] = []) => runCli(['logs', 'cli', '--kubeconfig', kubeconfigPath, '-n', ns, ...extra]);
    const rendered = await cli();
    assert.equal(rendered.code, 0, rendered.stderr);
    assert.match(rendered.stdout, new RegExp(`^=== ${ns}/cli episode 1: continue, exit 0, \\$0\\.0123`));
    assert.match(rendered.stdout, /\[init\] claude .*\nwords for the terminal\n/s);
    const raw = await cli(['--raw', '--episode', '1']);
    assert.equal(raw.code, 0, raw.stderr);
    assert.match(raw.stdout, /^episodic: .* episode 1 of 1 starting/);
    assert.match(raw.stdout, /\{"type":"system","subtype":"init"/);

    await client.delete(`/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`, { gracePeriodSeconds: 0 });
    const gone = await cli();
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /The pod of episode 1 \(cli-ep-1\) is gone/);
    assert.match(gone.stderr, /last message:\nwords for the terminal/);
  });

  it('episodic logs -f --kubeconfig follows the running episode until its container exits', async () => {
    await kubectl(['apply', '-f', '-'], { input: agentTaskManifest(ns, 'tail', fakeClaudeSpec(ONE_EPISODE)) });
    const pod = await kubelet.setRunning(await logs.bind(await waitForPod(client, ns, 'tail-ep-1')));
    logs.append(pod, said('before the follow'));
    const follow = startCli(['logs', 'tail', '-f', '--kubeconfig', kubeconfigPath, '-n', ns]);
    await waitFor('the first line', () => follow.output().includes('before the follow') || undefined);
    logs.append(pod, said('while following'));
    await waitFor('the line written later', () => follow.output().includes('while following') || undefined);
    logs.end(pod);
    assert.equal(await follow.exited, 0, follow.output());
  });
});
