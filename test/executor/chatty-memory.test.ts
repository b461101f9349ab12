// A 300 MB chatty agent must not grow the controller's memory: output streams to the log with backpressure
// and the analyzer keeps only bounded tails. Its own file so RSS is measured in a fresh test process.
import { strict as assert } from 'node:assert';
import { statSync } from 'node:fs';
import { afterEach, beforeEach, test } from 'node:test';
import { startProcessEpisode } from '../../controller/executors/process/process-episode.ts';
import { SUITE_HANG_GUARD_MS } from '../support/hang-guard.ts';
import { request, sandbox } from './support.ts';
import type { Sandbox } from './support.ts';

const CHATTY_MB = 300;
// Generous for GC jitter, far below what buffering the output would take (>= 300 MB).
const MAX_RSS_GROWTH_MB = 120;

let box: Sandbox;
beforeEach(() => {
  box = sandbox();
});
afterEach(() => box.cleanup());

test(`a ${CHATTY_MB} MB chatty agent keeps controller RSS bounded`, { timeout: SUITE_HANG_GUARD_MS }, async (t) => {
  const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    const result = await (
      await startProcessEpisode(
        request(box, {
          timeoutMs: 170_000,
          env: { FAKE_AGENT_MODE: 'chatty', FAKE_AGENT_CHATTY_MB: String(CHATTY_MB) },
        }),
      )
    ).result;
    assert.equal(result.exitCode, 0);
    assert.equal(result.format, 'claude');
    assert.equal(result.errorClass, 'none');
    assert.match(result.message ?? '', /more remain/, 'the final result after the flood was still read');
  } finally {
    clearInterval(sampler);
  }
  assert.ok(statSync(box.logFile).size >= CHATTY_MB * 1024 * 1024, 'everything reached the log');
  const growth = mb(peak - baseline);
  t.diagnostic(`rss baseline ${mb(baseline)} MB, peak ${mb(peak)} MB`);
  assert.ok(growth < MAX_RSS_GROWTH_MB, `RSS grew by ${growth} MB (baseline ${mb(baseline)} MB, peak ${mb(peak)} MB)`);
});
