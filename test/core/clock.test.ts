import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { systemClock } from '../../controller/core/clock.ts';

const MAX_TIMER_MS = 2 ** 31 - 1;

test('a timer past setTimeout’s 2^31-1 ms re-arms and fires on time, not at once or at the overflow', (t) => {
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  const fired: string[] = [];
  const thirtyDays = 30 * 24 * 3600 * 1000;
  systemClock.setTimer(() => fired.push('30 days'), thirtyDays);
  systemClock.setTimer(() => fired.push('1 s'), 1000);
  mock.timers.tick(1000);
  assert.deepEqual(fired, ['1 s']);
  mock.timers.tick(MAX_TIMER_MS - 1000);
  assert.deepEqual(fired, ['1 s'], 'not at the overflow (24.8 days)');
  mock.timers.tick(thirtyDays - MAX_TIMER_MS - 1);
  assert.deepEqual(fired, ['1 s'], 'not a millisecond early');
  mock.timers.tick(1);
  assert.deepEqual(fired, ['1 s', '30 days']);
});

test('a cancelled long timer never fires, its re-armed part included', (t) => {
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  let fired = false;
  const timer = systemClock.setTimer(() => {
    fired = true;
  }, MAX_TIMER_MS + 5000);
  mock.timers.tick(MAX_TIMER_MS);
  timer.cancel();
  mock.timers.tick(10_000);
  assert.equal(fired, false);
});
