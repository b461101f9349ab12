// The one retry rule every backoff uses: exponential, capped, with equal jitter supplied by the caller.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { API_RETRY, retryDelayMs } from '../../controller/util/retry-delay.ts';

test('retryDelayMs: exponential growth, the cap, and jitter between half and all of the delay', () => {
  const b = { initialMs: 100, factor: 2, maxMs: 1000 };
  const rows: Array<[attempt: number, jitter: number, ms: number]> = [
    [1, 1, 100], // the first retry waits initialMs
    [2, 1, 200],
    [4, 1, 800],
    [5, 1, 1000], // 1600 capped
    [50, 1, 1000], // far past the cap (and past 2^53) still the cap
    [1, 0, 50], // no luck: half the delay, never zero
    [4, 0.5, 600], // 400 fixed + 400 × 0.5
    [5, 0, 500],
    [0, 1, 100], // an attempt below 1 counts as the first
    [3, -1, 200], // jitter outside [0, 1] is clamped
    [3, 7, 400],
    [3, Number.NaN, 200], // and NaN counts as none
  ];
  for (const [attempt, jitter, ms] of rows) assert.equal(retryDelayMs(b, attempt, jitter), ms, `${attempt}, ${jitter}`);
});

test('retryDelayMs: a factor of 1 is a fixed delay; fractions of a millisecond round', () => {
  assert.equal(retryDelayMs({ initialMs: 250, factor: 1, maxMs: 1000 }, 9, 1), 250);
  assert.equal(retryDelayMs({ initialMs: 3, factor: 1.5, maxMs: 100 }, 2, 1), 5); // 4.5
});

test('API_RETRY: 200 ms doubling to 30 s', () => {
  const delays = [1, 2, 3, 8, 9, 20].map((n) => retryDelayMs(API_RETRY, n, 1));
  assert.deepEqual(delays, [200, 400, 800, 25_600, 30_000, 30_000]);
});
