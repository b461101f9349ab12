// The console's family, origin, fleet table and Triggers page in headless Chromium: children as a tree with
// links both ways, a trigger's task linked to its trigger and forge item, sort by a column, search as you
// type, grouping by parent and by trigger, and hostile text in every new field; screenshots at 1400 and 800 px
// checked for overlap and cut-off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { HOSTILE, launchBrowser, screenshot, startConsoleCli, watchedPage } from '../support/browser.ts';
import { assertLayoutClean } from '../support/layout.ts';
import { FAKE_CLAUDE, NODE, runCli, tempDir } from '../support/local.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 }, limits: { maxEpisodes: 3 } };

function task(dir: string, name: string, labels: Record<string, string>, costUSD: number): void {
  const spec = {
    prompt: 'p',
    agent: { command: [NODE, FAKE_CLAUDE], output: 'claude' },
    workspace: `ws/${name}`,
    ...fast,
  };
  mkdirSync(join(dir, 'ws', name), { recursive: true });
  writeFileSync(
    join(dir, 'ws', name, '.fake-agent.json'),
    JSON.stringify({ default: { mode: 'success', costUSD, text: HOSTILE } }),
  );
  const manifest = { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTask', metadata: { name, labels }, spec };
  writeFileSync(join(dir, `${name}.yaml`), JSON.stringify(manifest));
}

function trigger(dir: string): void {
  const spec = {
    source: { github: { repo: 'owner/repo', labels: ['agent'], tokenEnv: 'NO_SUCH_TOKEN_ENV' } },
    template: { spec: { prompt: 'p', agent: { command: ['true'] }, workspace: 'ws/t' } },
  };
  const manifest = { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTrigger', metadata: { name: 'issues' }, spec };
  writeFileSync(join(dir, 'issues.yaml'), JSON.stringify(manifest));
  const status = {
    lastPollAt: '2026-12-01T18:44:00Z',
    nextPollAt: '2026-12-01T18:45:00Z',
    itemsSeen: 3,
    tasksActive: 0,
    tasksCreated: 1,
    lastError: HOSTILE,
    heldItems: [
      { number: 8, title: HOSTILE, body: '', url: "javascript:window.__xss='held'", author: 'x', labels: [] },
      {
        number: 9,
        title: 'a fine issue',
        body: '',
        url: 'https://github.com/owner/repo/issues/9',
        author: 'y',
        labels: [],
      },
    ],
  };
  mkdirSync(join(dir, '.episodic', 'triggers', 'default'), { recursive: true });
  writeFileSync(join(dir, '.episodic', 'triggers', 'default', 'issues.json'), JSON.stringify(status));
  // A schedule beside it: its passes are ticks, the next one recorded as nextPollAt.
  const weekly = {
    ...manifest,
    metadata: { name: 'weekly' },
    spec: { ...spec, source: { schedule: { cron: '0 9 * * 1' } } },
  };
  writeFileSync(join(dir, 'weekly.yaml'), JSON.stringify(weekly));
  const ticked = { lastTick: '2026-11-30T09:00:00Z', nextPollAt: '2026-12-07T09:00:00Z', tasksCreated: 0 };
  writeFileSync(join(dir, '.episodic', 'triggers', 'default', 'weekly.json'), JSON.stringify(ticked));
}

const keysShown = (page: Page) => page.$$eval('tr[data-key]', (trs) => trs.map((t) => (t as HTMLElement).dataset.key));

async function assertInert(page: Page): Promise<void> {
  assert.equal(await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined);
  assert.equal(await page.locator('main img, main script, main a[href^="javascript"]').count(), 0);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations), []);
}

async function atBothWidths(page: Page, dir: string, name: string): Promise<void> {
  for (const width of [1400, 800]) {
    await page.setViewportSize({ width, height: 900 });
    await assertLayoutClean(page, `${name} at ${width} px`);
    await screenshot(page, dir, width === 1400 ? `${name}.png` : `${name}-${width}.png`);
  }
  await page.setViewportSize({ width: 1400, height: 900 });
}

test('console: family tree and origin links, a sortable searchable groupable fleet, the Triggers page; hostile text stays text', async () => {
  const dir = tempDir();
  task(dir, 'parent', { note: HOSTILE }, 0.3);
  task(dir, 'child-a', { 'episodic.dev/parent': 'parent', 'episodic.dev/depth': '1' }, 0.1);
  task(dir, 'child-b', { 'episodic.dev/parent': 'parent', 'episodic.dev/depth': '1' }, 0.2);
  task(dir, 'grandchild', { 'episodic.dev/parent': 'child-a', 'episodic.dev/depth': '2' }, 0.05);
  task(dir, 'issues-7', { 'episodic.dev/trigger': 'issues', 'episodic.dev/trigger-item': '7' }, 0.4);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 0, run.stderr);
  trigger(dir);
  const server = await startConsoleCli(dir);
  const browser = await launchBrowser();
  try {
    const page = await watchedPage(browser);
    await page.goto(`${server.url}/`);
    await page.waitForSelector('tr[data-key="default/grandchild"]');
    assert.match((await page.textContent('tr[data-key="default/parent"] [data-testid=labels]')) ?? '', /note=<script>/);
    assert.match(
      (await page.textContent('tr[data-key="default/parent"] [data-testid=started]')) ?? '',
      /^\d{4}-\d\d-\d\d \d\d:\d\dZ$/,
    );
    assert.match((await page.textContent('tr[data-key="default/parent"] [data-testid=duration]')) ?? '', /^\d+s$/);
    await atBothWidths(page, dir, 'console-fleet-table');

    // Sort by cost, then the other way.
    await page.click('th[data-sort=cost]');
    await page.waitForSelector('th[data-sort=cost][aria-sort=ascending]');
    const byCost = ['grandchild', 'child-a', 'child-b', 'parent', 'issues-7'].map((n) => `default/${n}`);
    assert.deepEqual(await keysShown(page), byCost);
    await page.click('th[data-sort=cost]');
    await page.waitForSelector('th[data-sort=cost][aria-sort=descending]');
    assert.deepEqual(await keysShown(page), [...byCost].reverse());

    // Search as you type: the table follows once typing pauses, and the box keeps its text and focus.
    await page.click('input[data-filter=search]');
    await page.keyboard.type('child', { delay: 20 });
    await page.waitForFunction(() => document.querySelectorAll('tr[data-key]').length === 3);
    assert.deepEqual(await keysShown(page), ['default/child-b', 'default/child-a', 'default/grandchild']);
    assert.equal(await page.inputValue('input[data-filter=search]'), 'child');
    await page.fill('input[data-filter=search]', '');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-key]').length === 5);

    // Grouped by parent: each child under its parent, folded away and back.
    await page.selectOption('select[data-filter=group]', 'parent');
    await page.waitForSelector('tr[data-key="default/child-a"][data-depth="1"]');
    assert.deepEqual(await keysShown(page), [
      'default/issues-7',
      'default/parent',
      'default/child-b',
      'default/child-a',
      'default/grandchild',
    ]);
    assert.equal(await page.getAttribute('tr[data-key="default/grandchild"]', 'data-depth'), '2');
    await page.click('button[data-fold="default/parent"]');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-key]').length === 2);
    await page.click('button[data-fold="default/parent"]');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-key]').length === 5);
    await atBothWidths(page, dir, 'console-fleet-grouped');
    // Grouped by trigger: a heading per trigger.
    await page.selectOption('select[data-filter=group]', 'trigger');
    await page.waitForSelector('tr.group[data-group="default/issues"]');
    assert.match(
      (await page.textContent('tr.group[data-group="default/issues"]')) ?? '',
      /trigger default\/issues \(1\)/,
    );
    assert.match((await page.textContent('tr.group[data-group=""]')) ?? '', /no trigger \(4\)/);

    // The parent's page: its children as a tree, each linked with its phase.
    await page.goto(`${server.url}/#/task/default/parent`);
    await page.waitForSelector('[data-testid=family] li[data-child="default/grandchild"]');
    const tree = await page.$$eval('[data-testid=family] li[data-child]', (lis) =>
      lis.map((li) => [(li as HTMLElement).dataset.child, li.parentElement?.closest('li')?.dataset.child ?? null]),
    );
    assert.deepEqual(tree, [
      ['default/child-a', null],
      ['default/grandchild', 'default/child-a'],
      ['default/child-b', null],
    ]);
    assert.match((await page.textContent('[data-testid=family]')) ?? '', /Children \(3\)/);
    assert.match(
      (await page.textContent('li[data-child="default/child-b"]')) ?? '',
      /Succeeded · 1 episode · \$0\.2000/,
    );
    assert.match((await page.textContent('[data-testid=origin]')) ?? '', /made by a person/);
    assert.equal(await page.textContent('[data-testid=audit]'), 'none');
    const icon = await page.evaluate(async () => {
      const res = await fetch((document.querySelector('link[rel=icon]') as HTMLLinkElement).href);
      return `${res.status} ${res.headers.get('content-type')}`;
    });
    assert.equal(icon, '200 image/svg+xml');
    await atBothWidths(page, dir, 'console-task-family');
    await page.click('li[data-child="default/child-a"] > a');
    await page.waitForSelector('[data-testid=parent]');
    assert.equal(await page.getAttribute('[data-testid=parent]', 'href'), '#/task/default/parent');
    assert.match((await page.textContent('[data-testid=family] h4')) ?? '', /Children \(1\)/);

    // A trigger's task links to its trigger and to its forge item (built from the trigger's source).
    await page.goto(`${server.url}/#/task/default/issues-7`);
    await page.waitForSelector('[data-testid=item]');
    assert.equal(await page.getAttribute('[data-testid=item]', 'href'), 'https://github.com/owner/repo/issues/7');
    assert.equal(await page.getAttribute('[data-testid=trigger]', 'href'), '#/triggers/default/issues');
    assert.match((await page.textContent('[data-testid=children]')) ?? '', /^none$/);

    // The Triggers page: source, polls, counts, tasks, held items (only http(s) linked) and the last error.
    await page.click('[data-testid=trigger]');
    await page.waitForSelector('section.trigger.selected[data-trigger="default/issues"]');
    const card = (await page.textContent('section[data-trigger="default/issues"]')) ?? '';
    assert.match(card, /github owner\/repo issues \[agent\]/);
    assert.match(card, /last poll2026-12-01 18:44Z/);
    assert.match(card, /next poll2026-12-01 18:45Z/);
    const weekly = (await page.textContent('section[data-trigger="default/weekly"]')) ?? '';
    assert.match(weekly, /schedule 0 9 \* \* 1 \(UTC\)/);
    assert.match(weekly, /last tick2026-11-30 09:00Z/);
    assert.match(weekly, /next tick2026-12-07 09:00Z/);
    assert.doesNotMatch(weekly, /poll/, 'a schedule ticks, it does not poll');
    assert.match(card, /items seen3/);
    assert.match(card, /tasks active \/ created0 \/ 1/);
    assert.match(card, /last error<script>window.__xss='script'<\/script>/);
    assert.ok(!card.includes('NO_SUCH_TOKEN_ENV'), 'no token env name on the page');
    assert.equal(await page.locator('[data-testid=trigger-tasks] a[href="#/task/default/issues-7"]').count(), 1);
    assert.equal(await page.locator('[data-testid=held] a').count(), 1);
    assert.equal(await page.getAttribute('[data-testid=held] a', 'href'), 'https://github.com/owner/repo/issues/9');
    await assertInert(page);
    await atBothWidths(page, dir, 'console-triggers');
  } finally {
    await browser.close();
    server.child.kill('SIGINT');
    await server.exited;
  }
});
