// The fleet's first page before the whole list: /api/tasks?first=N sends the first N rows in the order the page
// draws them and a summary of all, the HTML preloads it, and the page draws it while the whole list is held back
// (the whole list is held by the test until the first page is on screen: no timing involved).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { emptyStatus } from '../../controller/api/agent-task.ts';
import { defaultOrder, FIRST_MAX, firstPage, parseFirst, summaryOf } from '../../controller/console/fleet-order.ts';
import type { TaskRow } from '../../controller/console/views.ts';
import type { StoredStatus } from '../../controller/sinks/local/file-status.ts';
import { launchBrowser, startConsoleCli, watchedPage } from '../support/browser.ts';
import { tempDir } from '../support/local.ts';

const PHASES = ['Succeeded', 'Running', 'NeedsReview', 'Pending', 'Failed', 'Waiting'] as const;

const row = (key: string, phase: string, extra: Partial<TaskRow> = {}): TaskRow => {
  const [namespace, name] = key.split('/') as [string, string];
  return { key, namespace, name, labels: {}, phase, episodes: 0, costUSD: 0, ...extra };
};

test('fleet order: what needs a person first, a half-open breaker before what merely moves, ties by name', () => {
  const rows = [
    row('default/z', 'Succeeded'),
    row('default/b', 'Running'),
    row('default/a', 'Running', { breaker: 'HalfOpen' }),
    row('default/c', 'Failed'),
    row('default/d', 'NeedsReview'),
    row('b/x', 'Pending'),
    row('a/x', 'Pending'),
    row('default/q', 'SomethingNew'),
  ];
  assert.deepEqual(
    [...rows].sort(defaultOrder).map((r) => r.key),
    ['default/d', 'default/c', 'default/a', 'default/b', 'a/x', 'b/x', 'default/z', 'default/q'],
  );
});

test('first page: the first N in that order, the summary of all; N cut to 0..FIRST_MAX; ?first= read strictly', () => {
  const rows = Array.from({ length: 1500 }, (_, i) =>
    row(`default/t-${String(i).padStart(4, '0')}`, PHASES[i % PHASES.length] as string, { costUSD: 0.5 }),
  );
  const { items, summary } = firstPage(rows, 3);
  assert.deepEqual(
    items.map((r) => r.key),
    ['default/t-0002', 'default/t-0008', 'default/t-0014'],
  );
  assert.deepEqual(summary, summaryOf(rows));
  assert.equal(summary.total, 1500);
  assert.equal(summary.spendUSD, 750);
  assert.deepEqual(summary.phases, {
    Succeeded: 250,
    Running: 250,
    NeedsReview: 250,
    Pending: 250,
    Failed: 250,
    Waiting: 250,
  });
  assert.equal(firstPage(rows, 5000).items.length, FIRST_MAX);
  assert.equal(firstPage(rows, 0).items.length, 0);
  assert.deepEqual(firstPage([], 100), { items: [], summary: { total: 0, spendUSD: 0, phases: {} } });
  const table: Array<[string | null, number | undefined]> = [
    [null, undefined],
    ['', undefined],
    ['100', 100],
    ['0', 0],
    ['-1', undefined],
    ['1e3', undefined],
    ['12.5', undefined],
    [' 7', undefined],
    ['1234567', undefined],
  ];
  for (const [value, want] of table) assert.equal(parseFirst(value), want, String(value));
});

const TASKS = 250;
const taskName = (i: number) => `task-${String(i).padStart(3, '0')}`;

/** A state dir of TASKS tasks with written statuses (as the controller writes them); no agent runs. */
function fleetDir(): string {
  const dir = tempDir();
  const docs = Array.from({ length: TASKS }, (_, i) =>
    JSON.stringify({
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentTask',
      metadata: { name: taskName(i) },
      spec: { prompt: 'p', agent: { command: ['true'] }, workspace: `ws/${taskName(i)}` },
    }),
  );
  writeFileSync(join(dir, 'tasks.yaml'), docs.join('\n---\n'));
  const statusDir = join(dir, '.episodic/status/default');
  mkdirSync(statusDir, { recursive: true });
  for (let i = 0; i < TASKS; i++) {
    const status = emptyStatus();
    status.phase = PHASES[i % PHASES.length];
    status.costUSD = 0.01;
    const record: StoredStatus = { namespace: 'default', name: taskName(i), generation: 1, specHash: 't', status };
    writeFileSync(join(statusDir, `${taskName(i)}.json`), JSON.stringify(record));
  }
  return dir;
}

test('console: /api/tasks?first=N over HTTP, and the page draws the preloaded first page while the whole list is held', async () => {
  const server = await startConsoleCli(fleetDir());
  const browser = await launchBrowser();
  try {
    const whole = (await (await fetch(`${server.url}/api/tasks`)).json()) as { items: TaskRow[]; seq: number };
    assert.equal(whole.items.length, TASKS);
    const first = (await (await fetch(`${server.url}/api/tasks?first=100`)).json()) as ReturnType<typeof firstPage>;
    assert.deepEqual(
      first.items.map((r) => r.key),
      [...whole.items]
        .sort(defaultOrder)
        .slice(0, 100)
        .map((r) => r.key),
    );
    assert.equal(first.items[0]?.phase, 'NeedsReview');
    assert.deepEqual(first.summary, summaryOf(whole.items));
    const junk = (await (await fetch(`${server.url}/api/tasks?first=abc`)).json()) as { items: TaskRow[] };
    assert.equal(junk.items.length, TASKS, 'not a number: the whole list');

    const page = await watchedPage(browser);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const asked: string[] = [];
    await page.route(
      (url) => url.pathname === '/api/tasks',
      async (route) => {
        asked.push(new URL(route.request().url()).search);
        if (new URL(route.request().url()).search === '') await held; // the whole list waits for the test
        await route.continue();
      },
    );
    await page.goto(`${server.url}/`);
    await page.waitForSelector('[data-testid=loading-rest]');
    assert.equal(await page.locator('tr[data-key]').count(), 100);
    assert.equal(await page.textContent('[data-testid=total]'), `${TASKS} tasks`);
    assert.equal(await page.textContent('[data-testid=spend]'), 'spent $2.5000');
    assert.equal(await page.textContent('[data-phase-count=NeedsReview]'), 'NeedsReview 42');
    assert.equal(await page.getAttribute('tr[data-key]', 'data-key'), first.items[0]?.key);
    assert.match((await page.textContent('[data-testid=loading-rest]')) ?? '', /first 100 of 250/);
    release();
    await page.waitForSelector('text=page 1 of 3');
    assert.equal(await page.locator('[data-testid=loading-rest]').count(), 0);
    assert.equal(await page.locator('tr[data-key]').count(), 100);
    assert.deepEqual(asked.sort(), ['', '?first=100'], 'the first page once (preloaded), the whole list once');
    const violations = await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations);
    assert.deepEqual(violations, [], 'the preload and the lazily loaded chart script keep within the CSP');
  } finally {
    await browser.close();
    server.child.kill('SIGINT');
    await server.exited;
  }
});
