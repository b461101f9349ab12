// The local twin of test/cluster/prompt-file-ops.test.ts: a promptFile naming {{bb.KEY}}, {{children}} and
// {{messages}}, run by `episodic run`, renders as it does in an episode pod; the message is removed after.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { FAKE_CLAUDE, NODE, REPO, readStatus, runCli, specDir, tempDir } from '../support/local.ts';
import { OPS_PROMPT_FILE, OPS_PROMPT_RENDERED } from '../support/prompt-file-ops.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');

test('local: {{bb.plan}}, {{children}} and {{messages}} in a promptFile render as in a pod', async () => {
  const dir = tempDir();
  const record = join(dir, 'prompts.jsonl');
  specDir(
    [
      {
        name: 'lead',
        spec: {
          prompt: undefined,
          promptFile: 'PROMPT.md',
          completion: { onExitZero: true },
          agent: { command: [NODE, OPS_AGENT], output: 'text', env: [{ name: 'OPS_AGENT_RECORD', value: record }] },
        },
      },
    ],
    { dir },
  );
  mkdirSync(join(dir, 'ws', 'lead'), { recursive: true });
  writeFileSync(join(dir, 'ws', 'lead', 'PROMPT.md'), OPS_PROMPT_FILE);
  const owner = { kind: 'AgentTask' as const, namespace: 'default', name: 'lead', file: join(dir, 'lead.yaml') };
  await new LocalCreatedTasks({ stateDir: join(dir, '.episodic') }).create(owner, 'lead-a', {
    prompt: 'part a',
    agent: { command: [NODE, FAKE_CLAUDE, '--fake-mode=success'], output: 'claude' },
    workspace: 'ws/lead-a',
    limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 },
  });
  for (const args of [
    ['blackboard', 'set', 'plan', 'v1', dir],
    ['send', 'lead', 'hello lead', dir, '--from', 'bob'],
  ]) {
    const res = await runCli(args);
    assert.equal(res.code, 0, res.stderr);
  }

  const run = await runCli(['run', dir]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.equal(readStatus(dir, 'lead')?.status.phase, 'Succeeded');
  const runs = readFileSync(record, 'utf8').trim().split('\n');
  assert.equal(runs.length, 1, 'one episode, after the child ended');
  assert.match((JSON.parse(runs[0] ?? '{}') as { prompt: string }).prompt, OPS_PROMPT_RENDERED);
  const box = join(dir, '.episodic', 'mailboxes', 'default', 'lead');
  assert.deepEqual(existsSync(box) ? readdirSync(box) : [], [], 'acknowledged once the episode ended');
});
