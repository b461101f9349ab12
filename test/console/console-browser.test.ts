// The web console in a real headless Chromium: the fleet of a local run, a task's episodes, live updates and
// a streamed log while the page is open, Resume (audited), and an agent whose output tries to run script.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import {
  assertHostileLogInert,
  consoleUrlOf,
  closePages,
  HOSTILE,
  screenshot,
  sharedBrowser,
  startConsoleCli,
  watchedPage,
} from '../support/browser.ts';
import { readStatus, runCli, specDir, startCli } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const fast = {
  backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
  breaker: { noProgressEpisodes: 2, halfOpenEpisodes: 1, sameErrorEpisodes: 0 },
  resume: { policy: 'Manual' },
};

const fileBrowser = sharedBrowser();

/** fn with this file's one Chromium; the pages it opened are closed after it. */
async function withBrowser(fn: (browser: Browser) => Promise<void>): Promise<void> {
  const browser = await fileBrowser();
  try {
    await fn(browser);
  } finally {
    await closePages(browser);
  }
}

test('console: the fleet shows the tasks of a local run with their phases and costs; a task page shows its episodes', async () => {
  const dir = specDir([
    { name: 'done', spec: fast, script: { default: { mode: 'success', costUSD: 0.25 } } },
    {
      name: 'stuck',
      spec: { ...fast, limits: { maxEpisodes: 10, maxCostUSD: 2 } },
      script: { default: { mode: 'continue' } },
    },
  ]);
  const budget = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentBudget',
    metadata: { name: 'team' },
    spec: { limitUSD: 10 },
  };
  writeFileSync(join(dir, 'budget.yaml'), JSON.stringify(budget));
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 1, run.stderr);
  const stuck = readStatus(dir, 'stuck')?.status;
  assert.equal(stuck?.phase, 'NeedsReview');
  const server = await startConsoleCli(dir);
  try {
    await withBrowser(async (browser) => {
      const page = await watchedPage(browser);
      await page.goto(`${server.url}/`);
      await page.waitForSelector('tr[data-key="default/stuck"]');
      const rows = await page.$$eval('tr[data-key]', (trs) =>
        trs.map((tr) => [
          (tr as HTMLElement).dataset.key,
          tr.querySelector('[data-testid=phase]')?.textContent,
          tr.querySelector('[data-testid=cost]')?.textContent,
        ]),
      );
      // What needs a person comes first.
      assert.deepEqual(rows, [
        ['default/stuck', 'NeedsReview', `$${stuck?.costUSD.toFixed(4)} / $2.0000`],
        ['default/done', 'Succeeded', '$0.2500'],
      ]);
      assert.match(
        (await page.textContent('[data-testid=counts]')) ?? '',
        /2 tasks.*spent \$0\.2869.*NeedsReview 1.*Succeeded 1/,
      );
      await screenshot(page, dir, 'console-fleet.png');
      await page.selectOption('select[data-filter=phase]', 'Succeeded');
      await page.waitForFunction(() => document.querySelectorAll('tr[data-key]').length === 1);
      assert.equal(await page.getAttribute('tr[data-key]', 'data-key'), 'default/done');
      await page.selectOption('select[data-filter=phase]', '');

      await page.click('a[href="#/task/default/stuck"]');
      await page.waitForSelector('[data-testid=timeline] .mark');
      const marks = await page.$$eval('[data-testid=timeline] .mark', (els) =>
        els.map((e) => (e as HTMLElement).dataset.outcome),
      );
      assert.deepEqual(marks, Array(stuck?.episodes).fill('continue'));
      assert.match((await page.textContent('[data-testid=breaker]')) ?? '', /breaker: Open/);
      // The log is rendered for reading, as on a cluster: the result line, not its JSON.
      await page.waitForFunction(() =>
        /\[result\] success · \$0\.\d{4}/.test(document.querySelector('[data-testid=log]')?.textContent ?? ''),
      );
      assert.doesNotMatch((await page.textContent('[data-testid=log]')) ?? '', /"type":/, 'no raw JSON lines');
      assert.match((await page.textContent('[data-testid=evidence]')) ?? '', /outcome\s*continue/);
      assert.match((await page.textContent('[data-testid=audit]')) ?? '', /Stopped\s*controller\s*CircuitOpen/);
      await screenshot(page, dir, 'console-task-breaker.png');
      // The raw toggle shows the bytes as the agent printed them.
      await page.click('[data-testid=raw]');
      await page.waitForFunction(() =>
        document.querySelector('[data-testid=log]')?.textContent?.includes('"type":"result"'),
      );
      await page.click('[data-testid=raw]');
      await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent?.includes('[result]'));

      await page.click('a[href="#/budgets"]');
      await page.waitForSelector('[data-testid=budgets] td');
      assert.match(
        (await page.textContent('[data-testid=budgets]')) ?? '',
        /default\/team\s*total\s*\$0\.2869 \/ \$10\.00/,
      );
      assert.deepEqual(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations), []);
    });
  } finally {
    server.child.kill('SIGINT');
    await server.exited;
  }
});

test("console: run --console shows a status change and the running episode's log live, without a reload; Resume is audited", async () => {
  const dir = specDir([{ name: 'stuck', spec: fast, script: { default: { mode: 'continue' } } }]);
  const go = join(dir, 'go');
  specDir(
    [
      {
        name: 'live',
        spec: fast,
        script: { default: { mode: 'success', waitForFile: go, text: 'the work is finished' } },
      },
    ],
    { dir },
  );
  const run = startCli(['run', dir, '--watch', '--no-table', '--console', '127.0.0.1:0']);
  try {
    const url = await consoleUrlOf(run.output);
    await withBrowser(async (browser) => {
      const page = await watchedPage(browser);
      await page.goto(`${url}/#/task/default/live`);
      await page.waitForSelector('[data-testid=phase]:text("Running")');
      await page.evaluate(() => {
        (window as unknown as { __sameDocument: boolean }).__sameDocument = true;
      });
      // Rendered while it runs, as on a cluster: the init line reads `[init] claude …`, not its JSON.
      await page.waitForFunction(() =>
        document.querySelector('[data-testid=log]')?.textContent?.includes('[init] claude'),
      );
      assert.doesNotMatch((await page.textContent('[data-testid=log]')) ?? '', /"subtype":"init"/);
      writeFileSync(go, '');
      // The rest of the log arrives on the open stream, the new phase by server-sent events.
      await page.waitForFunction(() =>
        document.querySelector('[data-testid=log]')?.textContent?.includes('the work is finished'),
      );
      await page.waitForSelector('[data-testid=phase]:text("Succeeded")');
      assert.equal(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument), true);

      await waitFor('stuck needs review', () => readStatus(dir, 'stuck')?.status.phase === 'NeedsReview');
      await page.goto(`${url}/#/task/default/stuck`);
      page.once('dialog', (d) => void d.accept());
      await page.click('[data-testid=resume]');
      await page.waitForSelector('[data-testid=action-result]:text("resume requested by")');
      await page.waitForSelector('[data-testid=audit] td:text("Resumed")');
      const audit = readStatus(dir, 'stuck')?.status.audit ?? [];
      const resumed = audit.find((a) => a.action === 'Resumed');
      assert.match(resumed?.by ?? '', /^user:.+ via console$/);
      assert.match((await page.textContent('[data-testid=audit]')) ?? '', /Resumed\s*user:.+ via console/);
    });
  } finally {
    run.child.kill('SIGINT');
    await run.exited;
  }
});

test('console: an agent whose output and file names carry script, img onerror, javascript: links and terminal escapes executes nothing', async () => {
  const files = { '<img src=x onerror=alert(1)>.txt': HOSTILE, '<script>x<\\script>.md': 'x' };
  const dir = specDir([
    {
      name: 'evil',
      spec: { ...fast, prompt: HOSTILE, limits: { maxEpisodes: 1, episodeTimeoutSeconds: 30 } },
      script: { default: { mode: 'echo-prompt', then: 'continue', text: HOSTILE, stderr: HOSTILE, writeFiles: files } },
    },
  ]);
  await runCli(['run', dir]);
  assert.ok(existsSync(join(dir, 'ws/evil/<img src=x onerror=alert(1)>.txt')));
  const server = await startConsoleCli(dir);
  try {
    await withBrowser(async (browser) => {
      const page = await watchedPage(browser);
      await page.goto(`${server.url}/`);
      await page.waitForSelector('tr[data-key="default/evil"]');
      await page.click('a[href="#/task/default/evil"]');
      await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent?.includes('onerror'));
      const log = (await page.textContent('[data-testid=log]')) ?? '';
      await assertHostileLogInert(page, log);
      await screenshot(page, dir, 'xss-task.png');
    });
  } finally {
    server.child.kill('SIGINT');
    await server.exited;
  }
});
