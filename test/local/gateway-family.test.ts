// A family behind the model gateway shares its parent's cap (issue 29 §4): a parent with maxCostUSD $1 and
// AgentCredentials spawns two children that inherit both; each child is a stand-in agent calling the real
// Messages API through the gateway in a loop ($0.05 a request at the model server's toolloop). The gateway
// refuses once the family's cap is spent; what the family was metered at stays within the cap plus the
// requests in flight.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startModelServer } from '../model-server/server.ts';
import { NODE, REPO, readStatus, runCli, specDir } from '../support/local.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');
const LOOP_AGENT = join(REPO, 'test/agents/api-loop-agent.mjs');
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;
const child = (name: string) => op({ op: 'spawn', name, prompt: 'loop', agent: { command: [NODE, LOOP_AGENT] } });
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

test('local: two children behind the gateway under a $1 parent are metered at no more than $1.10 together', async () => {
  const server = await startModelServer();
  try {
    const dir = specDir([
      {
        name: 'p',
        spec: {
          prompt: undefined,
          stack: [`spawn two workers\n${child('a')}\n${child('b')}`, 'collect'],
          agent: {
            command: [NODE, OPS_AGENT],
            output: 'claude',
            env: [{ name: 'OPS_AGENT_CLAUDE', value: '1' }],
            credentials: 'creds',
          },
          limits: { maxEpisodes: 3, maxCostUSD: 1 },
        },
      },
    ]);
    writeFileSync(
      join(dir, 'creds.yaml'),
      JSON.stringify({
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentCredentials',
        metadata: { name: 'creds' },
        spec: {
          provider: 'anthropic',
          upstream: `${server.url}/s/toolloop.family`,
          credentials: [{ name: 'main', env: 'FAMILY_KEY' }],
          pricing: { '*': PRICE },
        },
      }),
    );
    const res = await runCli(['run', dir], { env: { FAMILY_KEY: 'sk-ant-family-key' } });
    const out = res.stdout + res.stderr;
    const [p, a, b] = ['p', 'p-a', 'p-b'].map((n) => readStatus(dir, n)?.status);
    const family = (p?.costUSD ?? 0) + (a?.costUSD ?? 0) + (b?.costUSD ?? 0);
    const forwarded = server.requestsFor('toolloop.family').length;
    console.log(`# family: ${forwarded} requests forwarded, status total $${family.toFixed(2)}`);
    assert.ok((a?.episodes ?? 0) >= 1 && (b?.episodes ?? 0) >= 1, out.slice(-3000));
    assert.equal(Math.round(family * 100), forwarded * 5, 'status counts what the gateway metered');
    assert.ok(family <= 1.1 + 1e-9, `the family was metered at $${family.toFixed(2)}`);
    for (const s of [a, b]) assert.equal(s?.reason, 'BudgetExceeded', s?.message);
  } finally {
    await server.close();
  }
});
