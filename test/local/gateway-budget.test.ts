// An AgentBudget window checked live at the wire (issue 29 §2): two tasks selected by one $1 budget run behind
// the model gateway at once, each a stand-in agent calling the real Messages API in a loop ($0.05 a request at
// the model server's toolloop). Each episode started with the whole $1 left; the gateway charges every request
// to the budget both episodes spend from and refuses, naming the AgentBudget, once it is spent together.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startModelServer } from '../model-server/server.ts';
import { NODE, REPO, readStatus, runCli, specDir, taskYaml } from '../support/local.ts';

const LOOP_AGENT = join(REPO, 'test/agents/api-loop-agent.mjs');
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };
const doc = (kind: string, name: string, spec: unknown) =>
  JSON.stringify({ apiVersion: 'episodic.dev/v1alpha1', kind, metadata: { name }, spec });

/** A task labelled team=a whose agent loops through the gateway; it is expected to cost $0.10, so both start. */
function looping(dir: string, name: string): void {
  const task = JSON.parse(
    taskYaml({
      name,
      spec: {
        agent: { command: [NODE, LOOP_AGENT], output: 'claude', credentials: 'creds' },
        limits: { maxEpisodes: 3, episodeTimeoutSeconds: 120, expectedEpisodeCostUSD: 0.1 },
      },
    }),
  );
  task.metadata.labels = { team: 'a' };
  writeFileSync(join(dir, `${name}.yaml`), JSON.stringify(task));
}

const records = (dir: string, name: string) =>
  readFileSync(join(dir, '.episodic', 'logs', 'default', name, 'episodes.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

test('local: two tasks of one $1 AgentBudget behind the gateway at once are metered at no more than $1.10 together', async () => {
  const server = await startModelServer();
  try {
    const dir = specDir([]);
    for (const name of ['a', 'b']) looping(dir, name);
    const upstream = `${server.url}/s/toolloop.budget`;
    writeFileSync(
      join(dir, 'creds.yaml'),
      doc('AgentCredentials', 'creds', {
        provider: 'anthropic',
        upstream,
        credentials: [{ name: 'main', env: 'BUDGET_KEY' }],
        pricing: { '*': PRICE },
      }),
    );
    const budget = { selector: { matchLabels: { team: 'a' } }, limitUSD: 1, window: 'total' };
    writeFileSync(join(dir, 'budget.yaml'), doc('AgentBudget', 'team-a', budget));
    const res = await runCli(['run', dir, '--max-concurrent', '2'], { env: { BUDGET_KEY: 'sk-ant-budget-key' } });
    const out = res.stdout + res.stderr;
    const [a, b] = ['a', 'b'].map((n) => readStatus(dir, n)?.status);
    const spent = (a?.costUSD ?? 0) + (b?.costUSD ?? 0);
    const forwarded = server.requestsFor('toolloop.budget').length;
    console.log(`# budget: ${forwarded} requests forwarded, status total $${spent.toFixed(2)}`);
    assert.ok((a?.costUSD ?? 0) > 0 && (b?.costUSD ?? 0) > 0, `both ran at once:\n${out.slice(-3000)}`);
    assert.equal(Math.round(spent * 100), forwarded * 5, 'status counts what the gateway metered');
    assert.ok(spent <= 1.1 + 1e-9, `the budget's tasks were metered at $${spent.toFixed(2)} together`);
    for (const [name, s] of [
      ['a', a],
      ['b', b],
    ] as const) {
      const [record, ...more] = records(dir, name);
      assert.equal(record.outcome, 'cancelled', JSON.stringify(record));
      assert.equal(record.reason, 'BudgetExceeded', JSON.stringify(record));
      assert.equal(more.length, 0, 'no episode starts into the spent budget');
      assert.equal(s?.phase, 'NeedsReview', s?.message);
      assert.equal(s?.reason, 'BudgetExceeded', s?.message);
      assert.match(record.gateway?.refused ?? '', /AgentBudget team-a: \$1\.0000 was left when the episode started/);
    }
    const status = JSON.parse(readFileSync(join(dir, '.episodic', 'budgets', 'default', 'team-a.json'), 'utf8'));
    assert.equal(
      Math.round(status.status.spentUSD * 100),
      forwarded * 5,
      "the budget's ledger holds the metered spend",
    );
  } finally {
    await server.close();
  }
});
