// The Task page's Suspend / Unsuspend, review items and PR links in a real headless Chromium: a suspend hold
// set and lifted with a confirmation, seen live and audited with who (the spec file untouched); a task's
// [!] plan items and new DISCOVERY.md entries shown as text; the PR its trigger opened linked from the fleet
// when the URL is http(s), shown as text otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { consoleUrlOf, launchBrowser, screenshot, startConsoleCli, watchedPage } from '../support/browser.ts';
import { readStatus, runCli, specDir, startCli, taskYaml } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 }, resume: { policy: 'Manual' } };

async function inBrowser(url: string, fn: (page: Page) => Promise<void>): Promise<void> {
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const page = await watchedPage(browser);
    await page.goto(url);
    await fn(page);
    assert.deepEqual(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations), []);
  } finally {
    await browser?.close();
  }
}

test('console: Suspend stops the running episode after a confirmation, Unsuspend lets it go on; both audited with who, the spec file untouched', async () => {
  const dir = specDir([]);
  const go = join(dir, 'go');
  specDir([{ name: 'long', spec: fast, script: { default: { mode: 'success', waitForFile: go } } }], { dir });
  const specBefore = readFileSync(join(dir, 'long.yaml'), 'utf8');
  const run = startCli(['run', dir, '--watch', '--no-table', '--console', '127.0.0.1:0']);
  try {
    const url = await consoleUrlOf(run.output);
    await inBrowser(`${url}/#/task/default/long`, async (page) => {
      await page.waitForSelector('[data-testid=phase]:text("Running")');
      const questions: string[] = [];
      // The first confirmation is declined: nothing happens.
      page.once('dialog', (d) => void d.dismiss());
      await page.click('[data-testid=suspend]');
      assert.equal(readStatus(dir, 'long')?.status.phase, 'Running');
      page.on('dialog', (d) => {
        questions.push(d.message());
        void d.accept();
      });
      await page.click('[data-testid=suspend]');
      // Arrives by server-sent events: the page is not reloaded.
      await page.waitForSelector('[data-testid=phase]:text("Suspended")');
      await page.waitForSelector('[data-testid=action-result]:text("suspend requested by")');
      assert.doesNotMatch((await page.textContent('[data-testid=action-result]')) ?? '', /next runs/, 'a run acts now');
      assert.match(questions[0] ?? '', /^Suspend default\/long\? A running episode is stopped/);
      assert.match(
        (await page.textContent('[data-testid=hold]')) ?? '',
        /suspended by .+ via console \(a hold, not spec\)/,
      );
      await waitFor('episode 1 cancelled', () => readStatus(dir, 'long')?.status.lastEpisode?.outcome === 'cancelled');
      await screenshot(page, dir, 'console-suspended.png');

      await page.click('[data-testid=unsuspend]');
      await page.waitForSelector('[data-testid=phase]:text("Running")');
      assert.equal(readStatus(dir, 'long')?.status.currentEpisode?.number, 2);
      writeFileSync(go, '');
      await page.waitForSelector('[data-testid=phase]:text("Succeeded")');
      const audit = (readStatus(dir, 'long')?.status.audit ?? []).map((a) => [a.action, a.by]);
      assert.equal(audit.length, 2, JSON.stringify(audit));
      assert.deepEqual(
        audit.map(([action]) => action),
        ['Suspended', 'Unsuspended'],
      );
      for (const [, by] of audit) assert.match(by ?? '', /^user:.+ via console$/);
      assert.match(
        (await page.textContent('[data-testid=audit]')) ?? '',
        /Suspended\s*user:.+ via console.*Unsuspended\s*user:.+ via console/s,
      );
    });
  } finally {
    run.child.kill('SIGINT');
    await run.exited;
  }
  assert.equal(readFileSync(join(dir, 'long.yaml'), 'utf8'), specBefore, 'the spec file is never written');
});

test('console: a task suspended by its spec says Unsuspend cannot lift that; a hold set beside it waits in the state directory', async () => {
  const dir = specDir([{ name: 'paused', spec: { ...fast, suspend: true }, script: { default: { mode: 'success' } } }]);
  await runCli(['run', dir]);
  assert.equal(readStatus(dir, 'paused')?.status.phase, 'Suspended');
  const server = await startConsoleCli(dir);
  try {
    await inBrowser(`${server.url}/#/task/default/paused`, async (page) => {
      await page.waitForSelector('[data-testid=spec-suspend]');
      assert.match(
        (await page.textContent('[data-testid=spec-suspend]')) ?? '',
        /spec\.suspend is true: only an edit of the spec lifts it/,
      );
      page.on('dialog', (d) => void d.accept());
      await page.click('[data-testid=suspend]');
      await page.waitForSelector('[data-testid=action-result]:text("suspend requested by")');
      assert.match(
        (await page.textContent('[data-testid=action-result]')) ?? '',
        /no episodic run is running on this state directory: takes effect when `episodic run` next runs on it/,
      );
      // No controller runs: the hold waits in the state directory, and the page shows it on its next look.
      await page.reload();
      await page.waitForSelector('[data-testid=unsuspend]');
      assert.match((await page.textContent('[data-testid=hold]')) ?? '', /spec\.suspend is true/);
    });
  } finally {
    server.child.kill('SIGINT');
    await server.exited;
  }
  const hold = JSON.parse(readFileSync(join(dir, '.episodic/suspend/default/paused.json'), 'utf8'));
  assert.equal(hold.suspended, true);
  assert.match(hold.by, / via console$/);
});

const XSS = `<img src=x onerror="window.__xss='review'">`;

test('console: review items — [!] plan items and new DISCOVERY.md entries — show on the task page as text', async () => {
  const files = { 'PLAN.md': `- [x] build it\n- [!] publish ${XSS}\n`, 'DISCOVERY.md': `- found ${XSS} in the logs\n` };
  const dir = specDir([{ name: 'flags', spec: fast, script: { default: { mode: 'success', writeFiles: files } } }]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(readStatus(dir, 'flags')?.status.review?.flagged.length, 1);
  const server = await startConsoleCli(dir);
  try {
    await inBrowser(`${server.url}/#/task/default/flags`, async (page) => {
      await page.waitForSelector('[data-testid=review] li');
      const items = await page.$$eval('[data-testid=review] li', (lis) => lis.map((li) => li.textContent ?? ''));
      assert.ok(
        items.some((i) => i.startsWith('flagged: ') && i.includes(`publish ${XSS}`)),
        JSON.stringify(items),
      );
      assert.ok(items.some((i) => i.startsWith('entries (DISCOVERY.md, episode 1): ') && i.includes(XSS)));
      assert.equal(await page.locator('main img').count(), 0);
      assert.equal(await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined);
    });
  } finally {
    server.child.kill('SIGINT');
    await server.exited;
  }
});

/** A task made by trigger TRIGGER: the episodic.dev/trigger label names it. */
function triggeredTask(dir: string, name: string): void {
  const manifest = JSON.parse(taskYaml({ name, spec: fast }));
  manifest.metadata.labels = { 'episodic.dev/trigger': 'issues' };
  writeFileSync(join(dir, `${name}.yaml`), JSON.stringify(manifest));
}

function writeTriggerStatus(dir: string, pullRequests: Record<string, { number: number; url: string }>): void {
  const triggers = join(dir, '.episodic/triggers/default');
  mkdirSync(triggers, { recursive: true });
  writeFileSync(join(triggers, 'issues.json.tmp'), JSON.stringify({ itemsSeen: 2, pullRequests }));
  writeFileSync(join(triggers, 'issues.json'), JSON.stringify({ itemsSeen: 2, pullRequests }));
}

test("console: the fleet links the PR a task's trigger opened, live; a javascript: URL stays text", async () => {
  const dir = specDir([{ name: 'plain', spec: fast, script: { default: { mode: 'success' } } }]);
  for (const name of ['fix-1', 'fix-2', 'fix-3']) triggeredTask(dir, name);
  const pr1 = { number: 7, url: 'https://forge.example/o/r/pulls/7' };
  const evil = { number: 8, url: "javascript:window.__xss='pr'" };
  writeTriggerStatus(dir, { 'fix-1': pr1, 'fix-2': evil });
  const server = await startConsoleCli(dir);
  try {
    await inBrowser(`${server.url}/`, async (page) => {
      await page.waitForSelector('tr[data-key="default/fix-1"] a[data-testid=pr]');
      assert.equal(await page.getAttribute('tr[data-key="default/fix-1"] a[data-testid=pr]', 'href'), pr1.url);
      assert.equal(await page.textContent('tr[data-key="default/fix-1"] [data-testid=pr]'), '#7');
      assert.equal(await page.locator('tr[data-key="default/fix-2"] a').count(), 1, 'only the task link');
      assert.equal(await page.textContent('tr[data-key="default/fix-2"] [data-testid=pr]'), '#8');
      assert.equal(await page.locator('tr[data-key="default/plain"] [data-testid=pr]').count(), 0);
      assert.equal(await page.locator('main a[href^="javascript"]').count(), 0);
      // The trigger opens a PR for fix-3 while the page is open.
      writeTriggerStatus(dir, { 'fix-1': pr1, 'fix-2': evil, 'fix-3': { number: 9, url: 'http://forge.example/9' } });
      await page.waitForSelector('tr[data-key="default/fix-3"] a[data-testid=pr][href="http://forge.example/9"]');
      await screenshot(page, dir, 'console-fleet-prs.png');
      await page.click('a[href="#/task/default/fix-1"]');
      await page.waitForSelector(`[data-testid=task] a[data-testid=pr][href="${pr1.url}"]`);
      assert.equal(await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined);
    });
  } finally {
    server.child.kill('SIGINT');
    await server.exited;
  }
});
