// The fleet page converges on the recorded state: tasks whose agents end within milliseconds of their start
// (a quick second status write) show their recorded phase, with `run --console` and with `episodic console`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { closePages, consoleUrlOf, sharedBrowser, startConsoleCli, watchedPage } from '../support/browser.ts';
import { readStatus, specDir, startCli } from '../support/local.ts';
import type { TaskOptions } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const fileBrowser = sharedBrowser();

// /bin/false and /bin/true exit at once: each task's episode starts and ends within a few milliseconds.
function quickTasks(n: number): TaskOptions[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `quick-${i}`,
    spec: {
      agent: { command: [i % 2 ? '/bin/true' : '/bin/false'], output: 'claude' },
      limits: { maxEpisodes: 1, episodeTimeoutSeconds: 30 },
      backoff: { initialSeconds: 0.01, factor: 1, maxSeconds: 0.01 },
    },
  }));
}

/** Each task's recorded phase once none has an episode running, read from the status files. */
async function settledPhases(dir: string, n: number): Promise<Record<string, string>> {
  return waitFor('every quick task to settle', () => {
    const phases: Record<string, string> = {};
    for (let i = 0; i < n; i++) {
      const status = readStatus(dir, `quick-${i}`)?.status;
      if (!status || status.currentEpisode || !['Failed', 'NeedsReview'].includes(status.phase ?? '')) return;
      phases[`default/quick-${i}`] = status.phase as string;
    }
    return phases;
  });
}

function fleetPhases(page: Page): Promise<Record<string, string>> {
  return page.$$eval('tr[data-key]', (trs) =>
    Object.fromEntries(
      trs.map((tr) => [(tr as HTMLElement).dataset.key, tr.querySelector('[data-testid=phase]')?.textContent ?? '']),
    ),
  );
}

async function assertConverges(page: Page, dir: string, n: number): Promise<void> {
  const recorded = await settledPhases(dir, n);
  // Not a timing bound: a page that missed the second write never converges, and this names what it shows.
  const shown = await waitFor(
    'the fleet page to show the recorded phases',
    async () => {
      const phases = await fleetPhases(page);
      return JSON.stringify(phases) === JSON.stringify(recorded) ? phases : undefined;
    },
    10_000,
  ).catch(async (err: Error) => {
    assert.deepEqual(await fleetPhases(page), recorded, err.message);
  });
  assert.ok(shown);
  assert.doesNotMatch((await page.textContent('[data-testid=fleet]')) ?? '', /episode 1 running/);
}

for (const round of [1, 2, 3]) {
  test(`console converges (round ${round}): run --watch --console, tasks that end within milliseconds show their recorded phase`, async () => {
    const n = 8;
    const dir = specDir(quickTasks(n));
    const run = startCli(['run', dir, '--watch', '--no-table', '--console', '127.0.0.1:0']);
    const browser = await fileBrowser();
    try {
      const page = await watchedPage(browser);
      await page.goto(`${await consoleUrlOf(run.output)}/`);
      await assertConverges(page, dir, n);
    } finally {
      await closePages(browser);
      run.child.kill('SIGINT');
      await run.exited;
    }
  });
}

test('console converges: `episodic console` beside a run that ends its tasks within milliseconds', async () => {
  const n = 8;
  const dir = specDir(quickTasks(n));
  const server = await startConsoleCli(dir);
  const browser = await fileBrowser();
  try {
    const page = await watchedPage(browser);
    await page.goto(`${server.url}/`);
    await page.waitForSelector(`tr[data-key="default/quick-${n - 1}"]`);
    const run = startCli(['run', dir, '--watch', '--no-table']);
    try {
      await assertConverges(page, dir, n);
      assert.equal(readdirSync(join(dir, '.episodic', 'status', 'default')).length >= n, true);
    } finally {
      run.child.kill('SIGINT');
      await run.exited;
    }
  } finally {
    await closePages(browser);
    server.child.kill('SIGINT');
    await server.exited;
  }
});
