// AgentBudgets in the one loop, on in-memory ports and a manual clock: the loop enters each episode's cost
// in the budget's ledger, holds the task while the window is full, and starts it again when the window
// rolls over — time moves only when the test advances it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { AgentBudgetSpecSchema } from '../../controller/api/agent-budget.ts';
import type { AgentBudgetStatus } from '../../controller/api/agent-budget.ts';
import type { BudgetStore, DesiredBudget } from '../../controller/core/budget-book.ts';
import { ManualClock } from '../../controller/core/clock.ts';
import { Controller } from '../../controller/core/controller.ts';
import { EpisodicMetrics } from '../../controller/metrics/metrics.ts';
import { desired, MemoryExecutor, MemorySink, MemorySource } from '../support/memory-ports.ts';

class MemoryBudgets implements BudgetStore {
  readonly budgets = new Map<string, DesiredBudget>();
  readonly statuses = new Map<string, AgentBudgetStatus>();
  private listeners: Array<(key: string) => void> = [];
  set(name: string, spec: Record<string, unknown>): void {
    const key = `default/${name}`;
    this.budgets.set(key, { key, namespace: 'default', name, generation: 1, spec: AgentBudgetSpecSchema.parse(spec) });
    for (const l of this.listeners) l(key);
  }
  list() {
    return this.budgets.values();
  }
  read(b: DesiredBudget) {
    return this.statuses.get(b.key);
  }
  async write(b: DesiredBudget, status: AgentBudgetStatus) {
    this.statuses.set(b.key, structuredClone(status));
  }
  subscribe(l: (key: string) => void) {
    this.listeners.push(l);
  }
}

function setup(budgets = new MemoryBudgets()) {
  const clock = new ManualClock(new Date('2026-11-23T10:00:00Z'));
  const source = new MemorySource();
  const executor = new MemoryExecutor(() => clock.now());
  const sink = new MemorySink();
  const metrics = new EpisodicMetrics({ defaultMetrics: false });
  const controller = new Controller({
    source,
    executor,
    sink,
    clock,
    budgets,
    metrics,
    logger: pino({ level: 'silent' }),
    maxConcurrent: 4,
    random: () => 0.5,
  });
  const settle = async () => {
    for (let i = 0; i < 20; i++) {
      await controller.idle();
      await new Promise((r) => setImmediate(r));
    }
  };
  return {
    clock,
    source,
    executor,
    sink,
    controller,
    settle,
    budgets,
    metrics,
    status: (n: string) => sink.statuses.get(`default/${n}`),
  };
}

test('budget loop: a 1h window holds the task once full and starts it again when the window rolls over', async () => {
  const t = setup();
  t.budgets.set('hourly', { limitUSD: 1, window: '1h', selector: { matchLabels: { team: 'a' } } });
  t.source.set(desired('a', {}, { labels: { team: 'a' } }));
  t.source.set(desired('free')); // not selected: never held
  t.controller.start();
  await t.settle();
  for (let n = 1; n <= 2; n++) {
    t.clock.advance(5 * 60_000);
    t.executor.finish('default/a', { exitCode: 0, costUSD: 0.4 });
    await t.settle();
  }
  // $0.80 spent at 10:05 and 10:10; 0.8 + 0.4 would cross $1: wait until 11:05, when the first leaves.
  assert.equal(t.status('a')?.reason, 'BudgetWindow', t.status('a')?.message);
  assert.equal(t.status('a')?.nextEpisodeAt, '2026-11-23T11:05:00.000Z');
  assert.equal(t.status('free')?.phase, 'Running');
  const b = t.budgets.statuses.get('default/hourly');
  assert.equal(b?.spentUSD, 0.8);
  assert.equal(b?.remainingUSD, 0.2);
  assert.deepEqual(b?.heldTasks, ['a']);
  assert.equal(b?.windowFreesAt, '2026-11-23T11:05:00.000Z');
  assert.equal(b?.episodesLastHour, 2);
  assert.match(await t.metrics.text(), /episodic_budget_tasks_held\{namespace="default",name="hourly"\} 1\n/);

  // Half a minute at a time (a pass reads the clock when it starts; one big jump would arm its requeue late).
  for (let m = 0; m < 54 * 2; m++) {
    t.clock.advance(30_000);
    await t.settle();
  }
  assert.equal(t.clock.now().toISOString(), '2026-11-23T11:04:00.000Z');
  assert.equal(t.executor.running.has('default/a'), false, 'still held at 11:04');
  // The requeue for 11:05 fires (armed up to the 30 s step after the pass that set it): the window has room.
  t.clock.advance(30_000);
  await t.settle();
  t.clock.advance(30_000);
  await t.settle();
  assert.equal(t.executor.running.get('default/a')?.number, 3);
  const after = t.budgets.statuses.get('default/hourly');
  assert.equal(after?.spentUSD, 0.4);
  assert.equal(after?.tasksHeld, 0);
});

test('budget loop: maxEpisodesPerHour waits (RateLimited), and a ledger read back after a restart keeps the window', async () => {
  const budgets = new MemoryBudgets();
  const t = setup(budgets);
  t.budgets.set('rate', { limitUSD: 100, window: '24h', maxEpisodesPerHour: 2 });
  t.source.set(desired('a'));
  t.controller.start();
  await t.settle();
  t.clock.advance(10 * 60_000);
  t.executor.finish('default/a', { exitCode: 0, costUSD: 0.1 });
  await t.settle();
  t.clock.advance(10 * 60_000);
  t.executor.finish('default/a', { exitCode: 0, costUSD: 0.1 });
  await t.settle();
  assert.equal(t.status('a')?.reason, 'RateLimited', t.status('a')?.message);
  assert.equal(t.status('a')?.nextEpisodeAt, '2026-11-23T11:00:00.000Z'); // the 10:00 start leaves the hour

  // A new loop over the same stores (a restart): the ledger, not memory, says what the window holds.
  const again = new Controller({
    source: t.source,
    executor: t.executor,
    sink: t.sink,
    clock: t.clock,
    budgets,
    logger: pino({ level: 'silent' }),
    maxConcurrent: 4,
    random: () => 0.5,
  });
  t.controller.halt();
  again.start();
  await again.idle();
  assert.equal(t.status('a')?.reason, 'RateLimited');
  assert.equal(t.executor.running.has('default/a'), false);
  for (let m = 0; m < 40; m++) {
    t.clock.advance(60_000);
    for (let i = 0; i < 5; i++) {
      await again.idle();
      await new Promise((r) => setImmediate(r));
    }
  }
  assert.equal(t.executor.running.get('default/a')?.number, 3);
  assert.equal(budgets.statuses.get('default/rate')?.spentUSD, 0.2);
});

test('budget loop: an episode behind the gateway gets its budget window shared, with what the ledger counted of each other task', async () => {
  const t = setup();
  t.budgets.set('hourly', { limitUSD: 1, window: '1h', selector: { matchLabels: { team: 'a' } } });
  const spec = { agent: { command: ['agent'], credentials: 'creds' }, limits: { expectedEpisodeCostUSD: 0.1 } };
  for (const n of ['a', 'b']) t.source.set(desired(n, spec, { labels: { team: 'a' } }));
  t.controller.start();
  await t.settle();
  const leashOf = (key: string, number: number) =>
    t.executor.calls.find((c) => c.op === 'start' && c.key === `default/${key}` && c.number === number)?.leash
      ?.others[0];
  // Both run at once: whichever started second knows the first's episode 1 is not in the ledger yet.
  const first = [leashOf('a', 1), leashOf('b', 1)];
  assert.deepEqual(
    first.map((o) => o?.shared?.key),
    ['budget hourly', 'budget hourly'],
  );
  assert.deepEqual(
    first.flatMap((o) => Object.values(o?.shared?.counted ?? {})),
    [0],
  );

  t.clock.advance(5 * 60_000);
  t.executor.finish('default/a', { exitCode: 0, costUSD: 0.3 });
  await t.settle();
  // a's episode 2: $0.70 left, b's episode 1 still running (counted through 0), a's $0.30 leaves at 11:05.
  const a2 = leashOf('a', 2);
  assert.equal(a2?.usd, 0.7);
  assert.deepEqual(a2?.shared, { key: 'budget hourly', counted: { b: 0 } });
  assert.deepEqual(a2?.frees, [{ atMs: Date.parse('2026-11-23T11:05:00Z'), usd: 0.3, tokens: 0 }]);

  t.clock.advance(5 * 60_000);
  t.executor.finish('default/b', { exitCode: 0, costUSD: 0.2 });
  await t.settle();
  // b's episode 2: a's episode 1 is in the ledger, its running episode 2 is not.
  const b2 = leashOf('b', 2);
  assert.equal(b2?.usd, 0.5);
  assert.deepEqual(b2?.shared, { key: 'budget hourly', counted: { a: 1 } });
  assert.equal(b2?.frees?.length, 2);
});

test("budget loop: an episode the gateway refused waits for the budget's running episodes at what the gateway metered on them, then stops", async () => {
  const t = setup();
  t.budgets.set('team', { limitUSD: 1, window: 'total', selector: { matchLabels: { team: 'a' } } });
  const spec = { agent: { command: ['agent'], credentials: 'creds' }, limits: { expectedEpisodeCostUSD: 0.1 } };
  for (const n of ['a', 'b']) t.source.set(desired(n, spec, { labels: { team: 'a' } }));
  t.controller.start();
  await t.settle();
  const refused = 'episodic: budget exhausted: AgentBudget team: $1.0000 was left when the episode started';
  const gateway = (costUSD: number) => ({
    requests: 1,
    tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    costUSD,
    refused,
  });
  // Together they reached $1 at the wire: a has been metered at $0.60 and still runs, b is refused at $0.40.
  t.executor.metered.set('default/a', { costUSD: 0.6, tokens: 0 });
  t.executor.finish('default/b', { exitCode: 1, costUSD: 0.4, gateway: gateway(0.4) });
  await t.settle();
  // Counted at its expected $0.10, a would leave room for b's next $0.40 episode; at its metered $0.60, none.
  assert.equal(t.executor.running.has('default/b'), false, 'no episode starts into the spent budget');
  assert.equal(t.status('b')?.reason, 'BudgetWindow', t.status('b')?.message);
  assert.match(t.status('b')?.message ?? '', /\$0\.60 expected of 1 episode running/);
  const [record] = t.sink.records.filter((r) => r.key === 'default/b');
  assert.equal(record?.record.reason, 'BudgetExceeded', 'the record says why it ended');

  t.executor.finish('default/a', { exitCode: 1, costUSD: 0.6, gateway: gateway(0.6) });
  await t.settle();
  for (const n of ['a', 'b']) {
    assert.equal(t.status(n)?.phase, 'NeedsReview', t.status(n)?.message);
    assert.equal(t.status(n)?.reason, 'BudgetExceeded');
  }
  assert.equal(t.executor.calls.filter((c) => c.op === 'start').length, 2, 'one episode each');
});
