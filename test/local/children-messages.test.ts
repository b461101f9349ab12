// The loop with children and mailboxes, through `episodic run`: a parent waits for its children
// (Waiting/WaitingForChildren) and its next prompt gets {{children}}; a wake: onMessage task waits
// (Waiting/AwaitingMessage) until `episodic send` gives it a message, which its next prompt gets as
// {{messages}} and which is removed once that episode has ended.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import {
  FAKE_CLAUDE,
  NODE,
  interruptWorker,
  readStatus,
  recordedPrompts,
  recordingClaude,
  runCli,
  specDir,
  startCli,
  tempDir,
} from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

test('a parent waits for its child and gets {{children}} with the child’s phase and last message', async () => {
  const dir = tempDir();
  const record = join(dir, 'parent-runs.jsonl');
  specDir(
    [
      {
        name: 'planner',
        spec: {
          prompt: 'Collect.\n{{children}}',
          // Its own promise: the child's last message quotes COMPLETE, which prompt-echo rules discount.
          completion: { promise: 'COLLECTED' },
          agent: {
            command: [NODE, FAKE_CLAUDE, '--fake-mode=success'],
            output: 'claude',
            env: [
              { name: 'FAKE_AGENT_RECORD', value: record },
              { name: 'FAKE_AGENT_PROMISE', value: 'COLLECTED' },
            ],
          },
        },
      },
    ],
    { dir },
  );
  const child = {
    prompt: 'part a',
    agent: { command: [NODE, FAKE_CLAUDE], output: 'claude' },
    workspace: 'ws/planner-a',
    limits: { maxEpisodes: 3, episodeTimeoutSeconds: 30 },
  };
  // The child works a while: a parent that did not wait would start before it ends.
  mkdirSync(join(dir, 'ws', 'planner-a'), { recursive: true });
  writeFileSync(
    join(dir, 'ws', 'planner-a', '.fake-agent.json'),
    JSON.stringify({ default: { mode: 'success', delayMs: 1500 } }),
  );
  const owner = { kind: 'AgentTask' as const, namespace: 'default', name: 'planner', file: join(dir, 'planner.yaml') };
  await new LocalCreatedTasks({ stateDir: join(dir, '.episodic') }).create(owner, 'planner-a', child);

  const run = startCli(['run', dir, '--no-table']);
  await waitFor(
    'the parent waiting for its child',
    () => readStatus(dir, 'planner')?.status.reason === 'WaitingForChildren',
  );
  assert.equal(readStatus(dir, 'planner')?.status.phase, 'Waiting');
  assert.equal(await run.exited, 0, run.output());
  assert.equal(readStatus(dir, 'planner-a')?.status.phase, 'Succeeded');
  const [prompt] = recordedPrompts(record);
  assert.match(prompt ?? '', /Collect\.\n- planner-a: Succeeded\n {2}last message: /);
});

test('wake: onMessage waits for a message; episodic send wakes it; {{messages}} has it, and it is removed after', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  specDir(
    [
      {
        name: 'bob',
        script: { episodes: { '1': { mode: 'continue' }, '2': { mode: 'success' } } },
        spec: {
          prompt: 'Inbox:\n{{messages}}',
          wake: 'onMessage',
          agent: recordingClaude(record),
          limits: { maxEpisodes: 2, episodeTimeoutSeconds: 30 },
        },
      },
    ],
    { dir },
  );
  const run = startCli(['run', dir, '--no-table']);
  try {
    await waitFor('bob waiting for a message', () => readStatus(dir, 'bob')?.status.reason === 'AwaitingMessage');
    assert.equal(recordedPrompts(record).length, 1, 'the first episode never waits');
    const sent = await runCli(['send', 'bob', 'please review PR 7', dir, '--from', 'alice']);
    assert.equal(sent.code, 0, sent.stderr);
    await waitFor('episode 2', () => recordedPrompts(record).length === 2);
    assert.match(recordedPrompts(record)[1] ?? '', /Inbox:\nfrom alice at \S+:\nplease review PR 7/);
    assert.equal(await run.exited, 0, run.output());
    const box = join(dir, '.episodic', 'mailboxes', 'default', 'bob');
    assert.deepEqual(existsSync(box) ? readdirSync(box) : [], [], 'acknowledged once episode 2 ended');
  } finally {
    run.child.kill('SIGINT');
  }
});

test('interrupt: a message stops the running episode (cancelled, not a failure); the next one gets it', async () => {
  const dir = tempDir();
  const record = join(dir, 'runs.jsonl');
  specDir([interruptWorker(record)], { dir });
  const run = startCli(['run', dir, '--no-table']);
  try {
    await waitFor(
      'episode 1 running',
      () => readStatus(dir, 'worker')?.status.currentEpisode?.number === 1 && recordedPrompts(record).length === 1,
    );
    const sent = await runCli(['send', 'worker', 'stop, the spec changed', dir, '--from', 'lead']);
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(await run.exited, 0, run.output());
    const status = readStatus(dir, 'worker')?.status;
    assert.equal(status?.phase, 'Succeeded');
    assert.equal(status?.consecutiveFailures, 0);
    const records = readFileSync(join(dir, '.episodic', 'logs', 'default', 'worker', 'episodes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { number: number; outcome: string });
    assert.deepEqual(
      records.map((r) => [r.number, r.outcome]),
      [
        [1, 'cancelled'],
        [2, 'succeeded'],
      ],
    );
    assert.match(recordedPrompts(record)[1] ?? '', /News:\nfrom lead at \S+:\nstop, the spec changed/);
  } finally {
    run.child.kill('SIGINT');
  }
});
