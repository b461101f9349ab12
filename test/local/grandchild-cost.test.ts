// A grandchild's spend counts toward every ancestor's maxCostUSD, with `episodic run`: the grandparent spawns a
// child, the child spawns a grandchild that spends $2, and the grandparent (cap $1, own spend $0.01) stops with
// NeedsReview/BudgetExceeded before its collecting frame instead of counting only its child's own $0.01.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir, tempDir } from '../support/local.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;

test('local: a grandchild’s spend makes its grandparent hit maxCostUSD', async () => {
  const record = join(tempDir(), 'prompts.jsonl');
  const grandchild = op({ op: 'spawn', name: 'g', stack: ['@cost 2\nexpensive work'] });
  const child = op({ op: 'spawn', name: 'c', stack: [`spawn the grandchild\n${grandchild}`, 'child collects'] });
  const dir = specDir([
    {
      name: 'gp',
      spec: {
        prompt: undefined,
        stack: [`spawn the child\n${child}`, 'grandparent collects'],
        agent: {
          command: [NODE, OPS_AGENT],
          output: 'claude',
          env: [
            { name: 'OPS_AGENT_CLAUDE', value: '1' },
            { name: 'OPS_AGENT_RECORD', value: record },
          ],
        },
        limits: { maxEpisodes: 5, maxCostUSD: 1 },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(readStatus(dir, 'gp-c-g')?.status.costUSD, 2, res.stdout + res.stderr);
  assert.equal(readStatus(dir, 'gp-c')?.status.costUSD, 0.01, 'the child’s own spend only: no double counting');
  const gp = readStatus(dir, 'gp')?.status;
  assert.equal(gp?.phase, 'NeedsReview');
  assert.equal(gp?.reason, 'BudgetExceeded');
  assert.match(gp?.message ?? '', /maxCostUSD 1 reached: \$2\.02 spent by the task \(\$0\.01\) and its children/);
  const ran = existsSync(record) ? readFileSync(record, 'utf8') : '';
  assert.ok(!ran.includes('## Task\\n\\ngrandparent collects'), 'the grandparent started no episode past its cap');
});
