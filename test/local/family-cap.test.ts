// A family's cap holds (issue 28), with `episodic run`: a parent with maxCostUSD $0.25 spawns two children that
// inherit it and spend $0.10 an episode without ever finishing. Each child's own cap would let it run to $0.30
// (the family spent $0.61 before the fix); with the family's cap predictive, no member starts an episode that
// would take the family past $0.25, and the children and the parent all stop on the parent's cap.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir } from '../support/local.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;
const child = (name: string) => op({ op: 'spawn', name, prompt: '@cost 0.1\nwork that never finishes' });

test('local: two children under a $0.25 parent spend no more than $0.25 together', async () => {
  const dir = specDir([
    {
      name: 'p',
      spec: {
        prompt: undefined,
        stack: [`spawn two workers\n${child('a')}\n${child('b')}`, 'collect'],
        agent: { command: [NODE, OPS_AGENT], output: 'claude', env: [{ name: 'OPS_AGENT_CLAUDE', value: '1' }] },
        limits: { maxEpisodes: 5, maxCostUSD: 0.25 },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  const out = res.stdout + res.stderr;
  const [p, a, b] = ['p', 'p-a', 'p-b'].map((n) => readStatus(dir, n)?.status);
  const family = (p?.costUSD ?? 0) + (a?.costUSD ?? 0) + (b?.costUSD ?? 0);
  assert.ok(family <= 0.25 + 1e-9, `the family spent $${family.toFixed(2)}: ${out}`);
  for (const [name, s] of [
    ['p-a', a],
    ['p-b', b],
  ] as const) {
    assert.ok((s?.episodes ?? 0) >= 1, `${name} ran: ${out}`);
    assert.equal(s?.phase, 'NeedsReview', `${name}: ${s?.message}`);
    assert.equal(s?.reason, 'BudgetExceeded', `${name}: ${s?.message}`);
    assert.match(s?.message ?? '', /maxCostUSD 0\.25 of p \(its family's cap\)/, name);
  }
  assert.equal(p?.phase, 'NeedsReview', p?.message);
  assert.match(p?.message ?? '', /^maxCostUSD 0\.25: \$0\.\d\d spent by the task \(\$0\.01\) and its children/);
});
