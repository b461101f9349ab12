// A pipeline on the Task page, in a real headless Chromium: the steps with their gate state, an episode's gate
// runs (a test gate that fails once, then passes after a fix episode), the outputs with long values cut and
// expandable; and a pipeline whose outputs, gate output and outputs note carry markup that must not run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { consoleUrlOf, launchBrowser, screenshot, startConsoleCli, watchedPage } from '../support/browser.ts';
import { NODE, REPO, readStatus, runCli, specDir, startCli } from '../support/local.ts';

const LONG = `${'a long value '.repeat(40)}END`;

/** plan → implement (a test gate that fails until FIXED exists, printing `say`) → review. */
function pipeline(say: string) {
  const check = `console.log(${JSON.stringify(say)}); process.exit(require('node:fs').existsSync('FIXED') ? 0 : 1)`;
  return {
    prompt: undefined,
    backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 },
    limits: { maxEpisodes: 6, episodeTimeoutSeconds: 30 },
    steps: [
      { name: 'plan', prompt: 'Plan it.', completion: { promise: 'PLANNED' } },
      {
        name: 'implement',
        prompt: 'Implement {{steps.plan.outputs.MODULE}}.',
        completion: { promise: 'BUILT' },
        gates: [{ name: 'test', check: [NODE, '-e', check], maxFixEpisodes: 2, timeoutSeconds: 20 }],
      },
      { name: 'review', prompt: 'Review it.', completion: { promise: 'APPROVED' } },
    ],
  };
}

function script(implementOutputs: Record<string, string>, fixWaitsFor?: string) {
  return {
    episodes: {
      '1': { mode: 'success', promise: 'PLANNED', outputs: { MODULE: 'slug.ts', PLAN: LONG } },
      '2': { mode: 'success', promise: 'BUILT', outputs: implementOutputs },
      '3': { mode: 'continue', writeFiles: { FIXED: 'yes\n' }, waitForFile: fixWaitsFor },
      '4': { mode: 'success', promise: 'APPROVED', outputs: { VERDICT: 'approved' } },
    },
  };
}

async function taskPage(dir: string, name: string, fn: (page: Page) => Promise<void>, ready?: string): Promise<void> {
  const server = await startConsoleCli(dir);
  try {
    await openTask(server.url, name, fn, ready);
  } finally {
    server.child.kill('SIGINT');
    await server.exited;
  }
}

async function openTask(
  url: string,
  name: string,
  fn: (page: Page) => Promise<void>,
  ready = '[data-testid=steps] tr[data-step]',
): Promise<void> {
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const page = await watchedPage(browser);
    await page.goto(`${url}/#/task/default/${name}`);
    await page.waitForSelector(ready);
    await fn(page);
    assert.deepEqual(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations), []);
  } finally {
    await browser?.close();
  }
}

const cells = (page: Page, selector: string) =>
  page.$$eval(selector, (trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent ?? '')));

test('console: a pipeline shows its steps, the gate state during a fix episode, the gate runs of an episode and its outputs, a long value cut with an expand', async () => {
  const dir = specDir([]);
  const go = join(dir, 'go');
  specDir(
    [{ name: 'feature', spec: pipeline('not ok 2 - adds numbers'), script: script({ EXPORTS: 'slugify' }, go) }],
    { dir },
  );
  const run = startCli(['run', dir, '--watch', '--no-table', '--console', '127.0.0.1:0']);
  try {
    await openTask(await consoleUrlOf(run.output), 'feature', async (page) => {
      // The fix episode waits for `go`: meanwhile the step shows the failed gate and its fix episodes.
      await page.waitForSelector('[data-testid=steps] tr[data-step=implement] [data-testid=gate]:text("fix episodes")');
      assert.equal(
        await page.textContent('[data-testid=steps] tr[data-step=implement] [data-testid=gate]'),
        'test failed (exit 1) · fix episodes 0/2',
      );
      assert.match((await page.textContent('h3:text("Steps")')) ?? '', /Steps — 2\/3 implement/);
      writeFileSync(go, '');
      await page.waitForSelector('[data-testid=steps] tr[data-step=review] td:text("Succeeded")');
      assert.equal(await page.textContent('[data-testid=steps] tr[data-step=implement] [data-testid=gate]'), '');
    });
  } finally {
    run.child.kill('SIGINT');
    await run.exited;
  }
  const status = readStatus(dir, 'feature')?.status;
  assert.equal(status?.phase, 'Succeeded', status?.message);
  await taskPage(dir, 'feature', async (page) => {
    const steps = await cells(page, '[data-testid=steps] tr[data-step]');
    assert.deepEqual(
      steps.map((s) => s.slice(0, 4)),
      [
        ['plan', 'Succeeded', 'PromiseDetected', '1'],
        ['implement', 'Succeeded', 'GatesPassed', '2'],
        ['review', 'Succeeded', 'PromiseDetected', '1'],
      ],
    );
    assert.match(steps[1][4], /^\$0\.0246$/);

    const outputs = await cells(page, '[data-testid=outputs] tr[data-output]');
    assert.deepEqual(
      outputs.map(([step, key]) => `${step}.${key}`),
      ['plan.MODULE', 'plan.PLAN', 'implement.EXPORTS', 'review.VERDICT'],
    );
    const plan = page.locator('[data-testid=outputs] tr[data-output=PLAN]');
    assert.doesNotMatch((await plan.textContent()) ?? '', /END/, 'a long value is cut on screen');
    await plan.locator('[data-testid=expand]').click();
    assert.match((await plan.textContent()) ?? '', /a long value a long value .*END/);

    // One mark per episode: episode 2's gate failed (its own colour, not its outcome's), steps named where they begin.
    const timeline = await page.$$eval('[data-testid=timeline] > *', (els) =>
      els.map((e) =>
        (e as HTMLElement).dataset.step ? `| ${(e as HTMLElement).dataset.step}` : (e as HTMLElement).dataset.kind,
      ),
    );
    assert.deepEqual(timeline, [
      '| plan',
      'succeeded',
      '| implement',
      'gateFailed',
      'continue',
      '| review',
      'succeeded',
    ]);
    const hover = (await page.getAttribute('.mark[data-episode="2"]', 'title')) ?? '';
    assert.match(hover, /^episode 2: succeeded, a gate failed \(a fix episode follows\), \d+\.\d s, \$0\.\d{4}$/);
    const colours = await page.$$eval('.mark[data-episode="2"], .mark[data-episode="3"]', (els) =>
      els.map((e) => getComputedStyle(e).backgroundImage + getComputedStyle(e).backgroundColor),
    );
    assert.notEqual(colours[0], colours[1], 'a failed gate and a continue look different');
    // Episode 2 built it and its test gate failed; the fix episode 3 made it pass.
    await page.click('[data-testid=timeline] .mark[data-episode="2"]');
    await page.waitForSelector('[data-testid=gate-runs] tr[data-gate=test][data-exit="1"]');
    const run = await cells(page, '[data-testid=gate-runs] tr[data-gate]');
    assert.equal(run[0][0], 'test');
    assert.equal(run[0][1], 'exit 1');
    assert.match(run[0][2], /^\d+\.\d s$/);
    assert.equal(run[0][3].trim(), 'not ok 2 - adds numbers');
    assert.match((await page.textContent('[data-testid=evidence]')) ?? '', /step\s*implement/);
    await screenshot(page, dir, 'console-task.png');
    await page.click('[data-testid=timeline] .mark[data-episode="3"]');
    await page.waitForSelector('[data-testid=gate-runs] tr[data-gate=test][data-exit="0"]');
  });
});

const XSS = `<img src=x onerror="window.__xss='img'">`;

test('console: markup in an output value, a gate output and an outputs note shows as text and runs nothing', async () => {
  // The second key is no C identifier: it is dropped, and the outputs note names it.
  const dir = specDir([{ name: 'evil', spec: pipeline(XSS), script: script({ RESULT: XSS, [XSS]: 'x' }) }]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  await taskPage(dir, 'evil', async (page) => {
    const result = await page.textContent('[data-testid=outputs] tr[data-output=RESULT]');
    assert.ok(result?.includes(XSS), 'the output value shows as text');
    await page.click('[data-testid=timeline] .mark[data-episode="2"]');
    await page.waitForSelector('[data-testid=gate-runs] tr[data-gate=test]');
    assert.equal((await page.textContent('[data-testid=gate-runs] pre.tail'))?.trim(), XSS);
    assert.ok((await page.textContent('[data-testid=outputs-note]'))?.includes('<img src=x'));
    assert.equal(await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined);
    assert.equal(await page.locator('main img, main script').count(), 0);
  });
});

test('console: a context stack task shows its stack depth and, per episode, the ops it gave and those rejected', async () => {
  const op = (v: unknown) => `@op ${JSON.stringify(v)}`;
  const plan = ['plan the work', op({ op: 'push', frames: ['part A'] }), op({ op: 'set', key: 'plan', value: 'v1' })];
  const rich = op({ op: 'spawn', name: 'rich', prompt: 'x', limits: { maxEpisodes: 100 } });
  const ship = ['ship it', '@raw {"op":"spawn","name":"../escape","prompt":"x"}', rich];
  const agent = { command: [NODE, join(REPO, 'test/agents/ops-agent.mjs')], output: 'text' };
  const dir = specDir([
    {
      name: 'stacky',
      spec: { prompt: undefined, stack: [plan.join('\n'), ship.join('\n')], agent, limits: { maxEpisodes: 5 } },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stdout + res.stderr);
  await taskPage(
    dir,
    'stacky',
    async (page) => {
      assert.match((await page.textContent('[data-testid=stack] h3')) ?? '', /Context stack — depth 0/);
      await page.click('[data-testid=timeline] .mark[data-episode="1"]');
      await page.waitForSelector('[data-testid=ops]:text("ops: push 1, set plan")');
      await page.click('[data-testid=timeline] .mark[data-episode="3"]');
      await page.waitForSelector('[data-testid=ops-rejected]');
      assert.match(
        (await page.textContent('[data-testid=ops-rejected]')) ?? '',
        /^ops rejected: line 1: spawn: name: must be a lowercase DNS label.*; spawn rich: limits.maxEpisodes 100 is above the parent's 5$/,
      );
      // Refused while applying (issue 28): the op given is marked, not shown as applied.
      assert.equal(await page.textContent('[data-testid=ops]'), 'ops: spawn rich (rejected)');
    },
    '[data-testid=stack]',
  );
});
