// A pipeline step's own prompt naming {{messages}} (no top-level prompt) gets the task's mailbox: a message
// sent with `episodic send` before the run reaches the second step's episode, not the first's, and is
// acknowledged (removed) after it. Before, only a top-level prompt or a promptFile caused a mailbox read.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir, tempDir } from '../support/local.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');

test("local: a pipeline step's prompt naming {{messages}} gets the message sent with episodic send", async () => {
  const dir = tempDir();
  const record = join(dir, 'prompts.jsonl');
  const env = [{ name: 'OPS_AGENT_RECORD', value: record }];
  const step = { completion: { onExitZero: true } };
  specDir(
    [
      {
        name: 'relay',
        spec: {
          prompt: undefined,
          agent: { command: [NODE, OPS_AGENT], output: 'text', env },
          steps: [
            { name: 'plan', prompt: 'Plan the reply.', ...step },
            { name: 'reply', prompt: 'Answer these messages:\n{{messages}}\nEnd of messages.', ...step },
          ],
        },
      },
    ],
    { dir },
  );
  const sent = await runCli(['send', 'relay', 'please say hello', dir, '--from', 'bob']);
  assert.equal(sent.code, 0, sent.stderr);

  const run = await runCli(['run', dir]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.equal(readStatus(dir, 'relay')?.status.phase, 'Succeeded');
  const prompts = readFileSync(record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { prompt: string }).prompt);
  assert.equal(prompts.length, 2, 'one episode per step');
  assert.match(prompts[0] ?? '', /^Plan the reply\./);
  assert.doesNotMatch(prompts[0] ?? '', /please say hello/, 'the first step does not name {{messages}}');
  assert.match(prompts[1] ?? '', /Answer these messages:\nfrom bob at [^\n]+:\nplease say hello\nEnd of messages\./);
  const box = join(dir, '.episodic', 'mailboxes', 'default', 'relay');
  assert.deepEqual(existsSync(box) ? readdirSync(box) : [], [], 'acknowledged once the episode ended');
});
