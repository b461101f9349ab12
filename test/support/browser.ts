// Headless Chromium for the console tests (playwright-core driving Debian's /usr/bin/chromium), and the
// console started as the real CLI.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { after } from 'node:test';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { REPO, startCli } from './local.ts';
import { waitFor } from './wait.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchBrowser(): Promise<Browser> {
  // --no-sandbox: the tests run as root in a container, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/**
 * One Chromium for a whole test file, launched on first use (a launch costs seconds of CPU). Call it at the
 * file's top level: its `after` hook closes the browser. Every page gets a context of its own, and each test
 * closes its pages with `closePages`, so no test sees another's cookies, storage or pages.
 */
export function sharedBrowser(): () => Promise<Browser> {
  let launched: Promise<Browser> | undefined;
  after(async () => {
    await launched?.then(
      (browser) => browser.close(),
      () => undefined, // the launch failed: the test that asked for it said so
    );
  });
  return () => {
    launched ??= launchBrowser();
    return launched;
  };
}

/** Closes every page a test opened on the shared browser (and the context of each): the browser stays up. */
export async function closePages(browser: Browser): Promise<void> {
  await Promise.all(browser.contexts().map((context) => context.close()));
}

/** `episodic console DIR --listen 127.0.0.1:0`, resolved once it says where it serves. */
export async function startConsoleCli(dir: string, extra: string[] = []) {
  const cli = startCli(['console', dir, '--listen', '127.0.0.1:0', ...extra]);
  const url = await waitFor('the console to serve', () => /serving .* at (http:\/\/\S+?)\/?$/m.exec(cli.output())?.[1]);
  return { ...cli, url };
}

/** The URL `episodic run --console 127.0.0.1:0` logged. */
export function consoleUrlOf(output: () => string): Promise<string> {
  return waitFor(
    'run --console to serve',
    () => /"url":"(http:\/\/[^"]+?)\/?","msg":"serving the console"/.exec(output())?.[1],
  );
}

/** Saves a screenshot in the test's temp dir, and as docs/NAME when EPISODIC_DOCS_SCREENSHOTS=1 asks for it. */
export async function screenshot(page: Page, dir: string, name: string): Promise<string> {
  const path = join(dir, name);
  await page.screenshot({ path, fullPage: true });
  if (process.env.EPISODIC_DOCS_SCREENSHOTS === '1') copyFileSync(path, join(REPO, 'docs', name));
  return path;
}

/** A page that records CSP violations and exposes a flag any injected script would set. */
export async function watchedPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.addInitScript(() => {
    const w = window as unknown as { __violations: string[] };
    w.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      w.__violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  return page;
}

/** Agent output that would run script in a page that rendered it as markup or passed terminal escapes on. */
export const HOSTILE = [
  `<script>window.__xss='script'</script>`,
  `<img src=x onerror="window.__xss='img'">`,
  `<a href="javascript:window.__xss='link'">click me</a>`,
  '\u001b[31mRED\u001b[0m \u001b]8;;javascript:window.__xss=1\u0007osc link\u001b]8;;\u0007',
].join(' ');

/** A page (from `watchedPage`) showing HOSTILE as `log` shows it as text and executed none of it. */
export async function assertHostileLogInert(page: Page, log: string): Promise<void> {
  assert.ok(log.includes(`<script>window.__xss='script'</script>`), 'the markup shows as text');
  assert.ok(!log.includes('\u001b'), 'terminal escapes are not passed through');
  assert.equal(await page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined);
  assert.equal(await page.locator('main img, main script, main a[href^="javascript"]').count(), 0);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations), []);
}
