// AgentBudgets end to end: a task that has not run yet is expected to cost what the budget's other tasks
// averaged, and episodes running at once count at their expected cost (issue 18.2). Stand-in agents report
// the cost of each episode; the budget's status file says what was spent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus, runCli, specDir, taskYaml } from '../support/local.ts';
import type { TaskOptions } from '../support/local.ts';

const LIMIT = 1;
const budgetDoc = JSON.stringify({
  apiVersion: 'episodic.dev/v1alpha1',
  kind: 'AgentBudget',
  metadata: { name: 'team-a' },
  spec: { selector: { matchLabels: { team: 'a' } }, limitUSD: LIMIT, window: 'total' },
});

/** Task files labelled team=a, the budget beside them. */
function teamDir(tasks: TaskOptions[]): string {
  const dir = specDir(tasks);
  for (const t of tasks) {
    const doc = JSON.parse(taskYaml(t));
    doc.metadata.labels = { team: 'a' };
    writeFileSync(join(dir, `${t.name}.yaml`), JSON.stringify(doc));
  }
  writeFileSync(join(dir, 'budget.yaml'), budgetDoc);
  return dir;
}

function spent(dir: string): number {
  return JSON.parse(readFileSync(join(dir, '.episodic', 'budgets', 'default', 'team-a.json'), 'utf8')).status.spentUSD;
}

test('budgets: a dependent that has not run yet is expected to cost what its budget averaged, and stops before the limit', async () => {
  const dir = teamDir([
    { name: 'first', script: { default: { mode: 'success', costUSD: 0.9 } } },
    { name: 'second', script: { default: { mode: 'success', costUSD: 0.3 } }, spec: { dependsOn: ['first'] } },
  ]);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 1, run.stderr);
  assert.equal(readStatus(dir, 'first')?.status.phase, 'Succeeded');
  const second = readStatus(dir, 'second')?.status;
  assert.equal(second?.episodes, 0, 'the dependent never starts an episode');
  assert.equal(second?.reason, 'BudgetExceeded');
  assert.match(
    second?.message ?? '',
    /spent \$0\.90 of \$1\.00 and the next episode is expected to cost \$0\.90 \(the average episode of the budget's other tasks\)/,
  );
  assert.ok(spent(dir) <= LIMIT, `spent $${spent(dir)} of $${LIMIT}`);
});

test('budgets: episodes running at once count against the budget at their expected cost', async () => {
  // Three tasks, three slots, $0.30 an episode that takes a moment: without counting what runs, all three
  // start together round after round and the last round ends past the limit.
  const script = { default: { mode: 'continue', costUSD: 0.3, delayMs: 300 } };
  const dir = teamDir(['a', 'b', 'c'].map((name) => ({ name, script })));
  const run = await runCli(['run', dir, '--max-concurrent', '3']);
  assert.equal(run.code, 1, run.stderr);
  const episodes = ['a', 'b', 'c'].map((n) => readStatus(dir, n)?.status.episodes ?? 0);
  assert.equal(
    episodes.reduce((s, n) => s + n, 0),
    3,
    `episodes ${episodes}`,
  );
  assert.ok(Math.abs(spent(dir) - 0.9) < 1e-9, `spent $${spent(dir)}`);
  for (const n of ['a', 'b', 'c']) assert.equal(readStatus(dir, n)?.status.reason, 'BudgetExceeded', n);
});
