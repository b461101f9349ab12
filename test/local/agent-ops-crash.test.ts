// Exactly once across a kill -9 (local): the controller dies while an episode runs; the agent finishes with
// its ops written while no controller runs; the next `episodic run` finds the un-applied result (its log and
// ops file), applies the push and the set once, and the task goes on from there.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;

test('kill -9 mid-episode: the restart applies the episode ops exactly once', async () => {
  const box = tempDir();
  const [started, go, done] = ['started', 'go', 'done'].map((f) => join(box, f));
  const first = [
    'first',
    op({ op: 'set', key: 'k', value: 'v1' }),
    op({ op: 'push', frames: ['after'] }),
    `@touch ${started}`,
    `@wait ${go}`,
    `@touch ${done}`,
  ].join('\n');
  const dir = specDir([
    {
      name: 'crashy',
      spec: {
        prompt: undefined,
        stack: [first, 'final'],
        agent: { command: [NODE, OPS_AGENT], output: 'claude', env: [{ name: 'OPS_AGENT_CLAUDE', value: '1' }] },
      },
    },
  ]);
  const run = startCli(['run', dir]);
  await waitFor('the first episode runs', () => existsSync(started), 30_000);
  run.child.kill('SIGKILL');
  await run.exited;
  writeFileSync(go, '');
  await waitFor('the agent ends while no controller runs', () => existsSync(done), 30_000);

  const again = await runCli(['run', dir]);
  assert.equal(again.code, 0, again.stdout + again.stderr);
  const status = readStatus(dir, 'crashy')?.status;
  assert.equal(status?.reason, 'StackEmpty');
  assert.equal(status?.episodes, 3, 'first, after (pushed once), final');
  const board = JSON.parse(readFileSync(join(dir, '.episodic', 'blackboard', 'default.json'), 'utf8'));
  assert.deepEqual(board, { entries: { k: 'v1' }, applied: { crashy: 1 } });
  const records = readFileSync(join(dir, '.episodic', 'logs', 'default', 'crashy', 'episodes.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    records.map((r) => [r.number, r.ops]),
    [
      [1, ['set k', 'push 1']],
      [2, undefined],
      [3, undefined],
    ],
  );
});
