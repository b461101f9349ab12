// AgentBudgets end to end in local mode: a budget document in the spec directory, a stand-in agent that
// reports $0.30 per episode, and the budget's status file in the state directory, across a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus, runCli, specDir, taskYaml } from '../support/local.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 } };
const budgetDoc = (spec: Record<string, unknown>) =>
  JSON.stringify({ apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentBudget', metadata: { name: 'team-a' }, spec });

/** A task labelled team=a whose agent reports $0.30 and continues, every episode. */
function labelled(dir: string, name: string): void {
  const doc = JSON.parse(taskYaml({ name, spec: { ...fast, limits: { maxEpisodes: 10, episodeTimeoutSeconds: 30 } } }));
  doc.metadata.labels = { team: 'a' };
  writeFileSync(join(dir, `${name}.yaml`), JSON.stringify(doc));
}

function readBudget(dir: string): any {
  return JSON.parse(readFileSync(join(dir, '.episodic', 'budgets', 'default', 'team-a.json'), 'utf8')).status;
}

test('budgets: a total budget stops the selected task predictively (BudgetExceeded), leaves others alone, and its ledger survives a restart', async () => {
  const script = { default: { mode: 'continue', costUSD: 0.3 } };
  const dir = specDir([
    { name: 'alpha', script },
    { name: 'other', script, spec: { ...fast, limits: { maxEpisodes: 4, episodeTimeoutSeconds: 30 } } },
  ]);
  labelled(dir, 'alpha');
  writeFileSync(
    join(dir, 'budget.yaml'),
    budgetDoc({ selector: { matchLabels: { team: 'a' } }, limitUSD: 1, window: 'total' }),
  );
  const metricsFile = join(dir, 'metrics.prom');

  const first = await runCli(['run', dir, '--metrics-file', metricsFile]);
  assert.equal(first.code, 1, first.stderr);
  const alpha = readStatus(dir, 'alpha')?.status;
  // $0.30 a time: 0.9 + 0.3 would cross $1, so the 4th episode never starts.
  assert.equal(alpha?.episodes, 3);
  assert.equal(alpha?.phase, 'NeedsReview');
  assert.equal(alpha?.reason, 'BudgetExceeded');
  assert.match(
    alpha?.message ?? '',
    /AgentBudget team-a: spent \$0\.90 of \$1\.00 and the next episode is expected to cost \$0\.30 \(total\)/,
  );
  // Not selected: runs to its own maxEpisodes.
  assert.equal(readStatus(dir, 'other')?.status.reason, 'MaxEpisodesReached');
  const budget = readBudget(dir);
  assert.equal(budget.window, 'total');
  assert.equal(budget.spentUSD, 0.9);
  assert.equal(budget.remainingUSD, 0.1);
  assert.equal(budget.tasksHeld, 1);
  assert.deepEqual(budget.heldTasks, ['alpha']);
  assert.equal(budget.ledger.tasks.length, 1);
  const metrics = readFileSync(metricsFile, 'utf8');
  assert.match(metrics, /episodic_budget_spent_usd\{namespace="default",name="team-a"\} 0\.9\n/);
  assert.match(metrics, /episodic_budget_remaining_usd\{namespace="default",name="team-a"\} 0\.1\n/);
  assert.match(metrics, /episodic_budget_tasks_held\{namespace="default",name="team-a"\} 1\n/);

  // A restart sees the spend: a new task of the team is expected to cost the team's $0.30 average
  // (issue 18.2: it used to get one episode on an empty average and end the budget at $1.20), so it never starts.
  labelled(dir, 'beta');
  mkdirSync(join(dir, 'ws', 'beta'), { recursive: true });
  writeFileSync(join(dir, 'ws', 'beta', '.fake-agent.json'), JSON.stringify(script));
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 1, second.stderr);
  const beta = readStatus(dir, 'beta')?.status;
  assert.equal(beta?.episodes, 0);
  assert.equal(beta?.reason, 'BudgetExceeded');
  assert.match(beta?.message ?? '', /expected to cost \$0\.30 \(the average episode of the budget's other tasks\)/);
  const after = readBudget(dir);
  assert.equal(after.spentUSD, 0.9);
  assert.equal(after.remainingUSD, 0.1);
  assert.deepEqual(after.heldTasks, ['alpha', 'beta']);
});

test('budgets: episodic validate checks AgentBudget documents, unknown fields with a did-you-mean', async () => {
  const dir = specDir([{ name: 't' }]);
  writeFileSync(join(dir, 'budget.yaml'), budgetDoc({ limitUSD: 5, window: '5h', maxEpisodesPerHour: 10 }));
  const ok = await runCli(['validate', join(dir, 't.yaml'), join(dir, 'budget.yaml')]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /1 AgentTask, 1 AgentBudget valid/);
  writeFileSync(
    join(dir, 'bad.yaml'),
    budgetDoc({ limitUsd: 5, window: '2h', selector: { matchExpressions: [{ key: 'team', operator: 'In' }] } }),
  );
  const bad = await runCli(['validate', join(dir, 'bad.yaml')]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /AgentBudget default\/team-a: spec\.limitUsd: unknown field \(did you mean "limitUSD"\?\)/);
  assert.match(bad.stderr, /spec\.window: /);
});
