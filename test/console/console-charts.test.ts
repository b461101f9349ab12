// The console's charts (uPlot, served from /assets) in headless Chromium: a task's cost over time with its cap
// as a labelled line and its episode durations, a budget's spend per hour and per day against its cap; axes
// and labels drawn, hover shows the exact figure. The episode detail's changed paths, the task's blackboard and
// waiting messages, all with hostile text; the Triggers page's hook URL with the real bound port of
// `--hooks-addr 127.0.0.1:0`. Screenshots at 1400 and 800 px checked for overlap and cut-off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { writeLocalBlackboard } from '../../controller/ops/local-blackboard.ts';
import { LocalMailboxes } from '../../controller/sinks/local/mailboxes.ts';
import {
  closePages,
  consoleUrlOf,
  HOSTILE,
  screenshot,
  sharedBrowser,
  startConsoleCli,
  watchedPage,
} from '../support/browser.ts';
import { assertLayoutClean } from '../support/layout.ts';
import { FAKE_CLAUDE, NODE, readStatus, runCli, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';
import { git } from '../support/git.ts';

const fileBrowser = sharedBrowser();

// A file name an agent could make: markup, a terminal escape and a right-to-left override (no slash).
const HOSTILE_PATH = `<img src=x onerror="window.__xss='path'">\u001b[31m\u202etxt.exe`;

function gitRepo(dir: string): void {
  git(dir, 'init', '-q', '--initial-branch=main');
  writeFileSync(join(dir, 'README'), 'r\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'start');
}

/** Three episodes in a git workspace (costs 0.1, 0.2, 0.15; cap 1), a 24h budget over it. */
function charted(dir: string): void {
  const ws = join(dir, 'ws', 'charted');
  mkdirSync(ws, { recursive: true });
  gitRepo(ws);
  const script = {
    episodes: {
      '1': { mode: 'continue', costUSD: 0.1, writeFiles: { [HOSTILE_PATH]: 'x\n', 'notes.md': 'n\n' } },
      '2': { mode: 'continue', costUSD: 0.2, writeFiles: { 'notes.md': 'n\nm\n' } },
      '3': { mode: 'success', costUSD: 0.15 },
    },
  };
  writeFileSync(join(ws, '.fake-agent.json'), JSON.stringify(script));
  writeFileSync(join(ws, '.git', 'info', 'exclude'), '.fake-agent.json\n');
  const spec = {
    prompt: 'p',
    agent: { command: [NODE, FAKE_CLAUDE], output: 'claude' },
    workspace: 'ws/charted',
    limits: { maxEpisodes: 5, maxCostUSD: 1 },
    backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
    breaker: { noProgressEpisodes: 5 },
  };
  const task = { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTask', metadata: { name: 'charted' }, spec };
  writeFileSync(join(dir, 'charted.yaml'), JSON.stringify(task));
  const budget = { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentBudget', metadata: { name: 'team' } };
  writeFileSync(join(dir, 'budget.yaml'), JSON.stringify({ ...budget, spec: { limitUSD: 2, window: '24h' } }));
}

/** What the chart's legend says for a series once the cursor is over the plot at x (0..1 of its width). */
async function hoverFigure(page: Page, chart: string, x: number, series: number): Promise<string> {
  const over = page.locator(`[data-testid=${chart}] .u-over`);
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  assert.ok(box, `${chart}: the plot area is drawn`);
  await page.mouse.move(box.x + box.width * x, box.y + box.height / 2);
  const value = page.locator(`[data-testid=${chart}] .u-legend .u-series:nth-child(${series + 1}) .u-value`);
  return waitFor(`${chart}: a figure under the cursor`, async () => {
    const text = (await value.textContent()) ?? '';
    return /\d/.test(text) ? text : undefined;
  });
}

/** The axes' names (said beside the chart), once the canvas has ink left of and below the plot: ticks and labels. */
async function axisLabels(page: Page, chart: string): Promise<string[]> {
  const ink = await page.$eval(`[data-testid=${chart}]`, (box) => {
    const canvas = box.querySelector('canvas') as HTMLCanvasElement;
    const over = box.querySelector('.u-over') as HTMLElement;
    const ratio = canvas.width / canvas.getBoundingClientRect().width;
    const ctx = canvas.getContext('2d') as CanvasRenderingContext2D;
    const inked = (x: number, y: number, w: number, h: number) =>
      ctx.getImageData(x, y, Math.max(1, w), Math.max(1, h)).data.filter((v, i) => i % 4 === 3 && v > 0).length;
    const left = Math.floor(over.offsetLeft * ratio);
    const bottom = Math.ceil((over.offsetTop + over.offsetHeight) * ratio);
    return { yAxis: inked(0, 0, left, canvas.height), xAxis: inked(0, bottom, canvas.width, canvas.height - bottom) };
  });
  assert.ok(ink.yAxis > 200 && ink.xAxis > 200, `${chart}: axes drawn ${JSON.stringify(ink)}`);
  const text = (await page.textContent(`[data-testid=${chart}] [data-testid=axes]`)) ?? '';
  return text.replace(/^axes: /, '').split(' · ');
}

async function atBothWidths(page: Page, dir: string, name: string, redraw: () => Promise<void>): Promise<void> {
  for (const width of [1400, 800]) {
    await page.setViewportSize({ width, height: 900 });
    await redraw(); // a chart takes its width when drawn
    await assertLayoutClean(page, `${name} at ${width} px`);
    await screenshot(page, dir, width === 1400 ? `${name}.png` : `${name}-${width}.png`);
  }
  await page.setViewportSize({ width: 1400, height: 900 });
}

async function assertInert(page: Page): Promise<void> {
  assert.equal(await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined);
  assert.equal(await page.locator('main img, main script, main a[href^="javascript"]').count(), 0);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations), []);
}

test('console: cost and duration charts with axes, cap and hover; changed paths, blackboard and mailbox, hostile text inert', async () => {
  const dir = tempDir();
  charted(dir);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 0, run.stderr);
  const status = readStatus(dir, 'charted')?.status;
  assert.equal(status?.episodes, 3);
  const stateDir = join(dir, '.episodic');
  writeLocalBlackboard(stateDir, 'default', {
    entries: { 'plan.owner': 'charted', [`k-${HOSTILE}`]: `v\u202e ${HOSTILE}` },
    applied: {},
  });
  const sent = await new LocalMailboxes(stateDir).send('default', 'charted', {
    id: 'm1',
    from: 'person',
    at: '2026-12-01T18:44:00Z',
    text: `please look \u202e ${HOSTILE}`,
  });
  assert.equal(sent.result, 'sent');
  const server = await startConsoleCli(dir);
  const browser = await fileBrowser();
  try {
    const page = await watchedPage(browser);
    const open = async () => {
      await page.goto(`${server.url}/#/task/default/charted`);
      await page.waitForSelector('[data-testid=cost-chart] .u-over');
      await page.click('.mark[data-episode="1"]');
      await page.waitForSelector('[data-testid=files] li');
    };
    await open();
    assert.deepEqual(await axisLabels(page, 'cost-chart'), ['time (episode end)', 'cost (USD, cumulative)']);
    assert.deepEqual(await axisLabels(page, 'duration-chart'), ['episode', 'duration (seconds)']);
    assert.match((await page.textContent('[data-testid=cost-chart] .u-legend')) ?? '', /cap \$1\.0000/);
    // The right end of the line is the last episode: $0.45 spent in all; the cap's figure beside it.
    assert.equal(await hoverFigure(page, 'cost-chart', 0.99, 1), '$0.4500');
    assert.equal(await hoverFigure(page, 'cost-chart', 0.99, 2), '$1.0000');
    assert.match(await hoverFigure(page, 'duration-chart', 0.02, 1), /^\d+\.\d s$/);

    const files = await page.$$eval('[data-testid=files] li', (lis) => lis.map((li) => li.textContent));
    // The escape sequence is taken out whole, the override shown by its code.
    assert.deepEqual(files.sort(), [`<img src=x onerror="window.__xss='path'">⟨U+202E⟩txt.exe`, 'notes.md']);
    assert.match((await page.textContent('[data-testid=evidence]')) ?? '', /files changed\s*2 \(\+2 −0\)/);
    assert.match((await page.textContent('[data-testid=blackboard]')) ?? '', /plan\.owner\s*charted/);
    assert.match((await page.textContent('[data-testid=blackboard]')) ?? '', /k-<script>/);
    const mail = (await page.textContent('[data-testid=mailbox]')) ?? '';
    assert.match(mail, /person/);
    assert.match(mail, /please look ⟨U\+202E⟩ <script>/);
    await assertInert(page);
    await atBothWidths(page, dir, 'console-task-charts', open);

    // The budget: spend per hour and per day as bars against its 24h limit.
    const budgets = async () => {
      await page.goto(`${server.url}/#/budgets`);
      await page.reload();
      await page.waitForSelector('[data-testid=budget-chart-day] .u-over');
    };
    await budgets();
    assert.deepEqual(await axisLabels(page, 'budget-chart-hour'), ['time (per hour)', 'spend (USD)']);
    assert.deepEqual(await axisLabels(page, 'budget-chart-day'), ['time (per day)', 'spend (USD)']);
    assert.match((await page.textContent('[data-testid=budget-chart-day] .u-legend')) ?? '', /\$2\.0000 per 24h/);
    assert.equal(await hoverFigure(page, 'budget-chart-day', 0.5, 1), '$0.4500');
    await assertInert(page);
    await atBothWidths(page, dir, 'console-budget-charts', budgets);
  } finally {
    await closePages(browser);
    server.child.kill();
  }
});

test('console: the Triggers page shows the hook URL with the port --hooks-addr 127.0.0.1:0 was given', async () => {
  const dir = tempDir();
  const spec = {
    source: { webhook: { forge: 'gitea', secretEnv: 'HOOK_SECRET' } },
    template: { spec: { prompt: 'p', agent: { command: [NODE, FAKE_CLAUDE] } } },
  };
  const trigger = { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTrigger', metadata: { name: 'pushes' }, spec };
  writeFileSync(join(dir, 'pushes.yaml'), JSON.stringify(trigger));
  const args = ['run', '--watch', dir, '--hooks-addr', '127.0.0.1:0', '--console', '127.0.0.1:0'];
  const cli = startCli(args, { env: { ...process.env, HOOK_SECRET: 's3cret' } });
  const browser = await fileBrowser();
  try {
    const url = await consoleUrlOf(cli.output);
    const page = await watchedPage(browser);
    await page.goto(`${url}/#/triggers`);
    const shown = await waitFor('the hook URL', async () => {
      await page.reload();
      await page.waitForSelector('section.trigger');
      return (
        (await page
          .locator('[data-testid=hook-url]')
          .textContent()
          .catch(() => null)) ?? undefined
      );
    });
    const m = /^http:\/\/127\.0\.0\.1:(\d+)\/hooks\/default\/pushes$/.exec(shown);
    assert.ok(m, shown);
    assert.notEqual(m[1], '0');
    // The port is the one that answers: a delivery without a signature is refused there, not unreachable.
    const res = await fetch(shown, { method: 'POST', body: '{}' });
    assert.ok(res.status >= 400 && res.status < 500, String(res.status));
    assert.ok(!shown.includes('s3cret'));
  } finally {
    await closePages(browser);
    cli.child.kill();
    await cli.exited;
  }
});
