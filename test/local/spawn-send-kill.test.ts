// spawn and send exactly once across a kill -9 of `episodic run`, with the kill inside the application of
// an ended episode's ops: boss's episode 1 spawns two children and sends to peer and to sink; sink's mailbox
// is a file where a directory belongs, so applying fails after the spawns and the message to peer (status
// keeps pendingOps, the loop retries). Meanwhile peer (wake: onMessage) gets its message in an episode that
// ends, which acknowledges (removes) it. The controller is killed then; the next run applies the ops again
// once the mailbox is fixed: no second child, no second message to peer, one message to sink.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir, startCli, tempDir } from '../support/local.ts';
import { KILL_TASKS } from '../support/spawn-send-kill.ts';
import { waitFor } from '../support/wait.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');
const agent = (record: string) => ({
  command: [NODE, OPS_AGENT],
  output: 'text',
  env: [{ name: 'OPS_AGENT_RECORD', value: record }],
});
const prompts = (file: string): string[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { prompt: string }).prompt)
    : [];
const messagesIn = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.json'));
const count = (texts: string[], needle: string) => texts.filter((t) => t.includes(needle)).length;

test('kill -9 while an episode’s spawn and send ops are applied: one child each, one copy of each message', async (t) => {
  const tmp = tempDir();
  const [bossRecord, peerRecord] = ['boss.jsonl', 'peer.jsonl'].map((f) => join(tmp, f));
  const dir = specDir(
    (['boss', 'peer', 'sink'] as const).map((name) => ({
      name,
      spec: { prompt: undefined, ...KILL_TASKS[name], agent: agent(join(tmp, `${name}.jsonl`)) },
    })),
  );
  const state = join(dir, '.episodic');
  const mailboxes = join(state, 'mailboxes', 'default');
  mkdirSync(mailboxes, { recursive: true });
  writeFileSync(join(mailboxes, 'sink'), 'not a directory');

  const first = startCli(['run', dir]);
  t.after(() => first.child.kill('SIGKILL'));
  await waitFor('applying boss’s ops fails at sink', () => /"task":"boss".*reconcile failed/.test(first.output()));
  await waitFor('peer got hello peer in an episode that ended, and acknowledged it', () => {
    const got = count(prompts(peerRecord), 'hello peer') === 1;
    return got && readStatus(dir, 'peer')?.status.episodes === 2 && messagesIn(join(mailboxes, 'peer')).length === 0;
  });
  // A person's message reaches peer's next episode, so its delivery record no longer names hello peer's id.
  const poke = await runCli(['send', 'peer', 'poke', dir]);
  assert.equal(poke.code, 0, poke.stderr);
  await waitFor('peer got the poke in an episode that ended', () => readStatus(dir, 'peer')?.status.episodes === 3);
  await waitFor('and acknowledged it', () => {
    const left = messagesIn(join(mailboxes, 'peer'));
    if (left.length > 0) throw new Error(`${left} ${JSON.stringify(readStatus(dir, 'peer')?.status)}`);
    return true;
  });
  const boss = readStatus(dir, 'boss')?.status;
  assert.equal(boss?.pendingOps?.episode, 1, 'the kill comes while boss’s ops are pending');
  assert.deepEqual(readdirSync(join(state, 'created', 'default')).sort(), ['boss-a.yaml', 'boss-b.yaml']);
  first.child.kill('SIGKILL');
  await first.exited;

  rmSync(join(mailboxes, 'sink'));
  const metricsFile = join(tmp, 'metrics.prom');
  const again = await runCli(['run', dir, '--metrics-file', metricsFile]);
  assert.equal(again.code, 0, again.stdout + again.stderr);
  assert.equal(readStatus(dir, 'boss')?.status.reason, 'StackEmpty');
  assert.deepEqual(readdirSync(join(state, 'created', 'default')).sort(), ['boss-a.yaml', 'boss-b.yaml']);
  for (const child of ['boss-a', 'boss-b']) assert.equal(readStatus(dir, child)?.status.episodes, 1, child);

  const peer = prompts(peerRecord);
  assert.equal(count(peer, 'hello peer'), 1, `hello peer reached one prompt once:\n${peer.join('\n---\n')}`);
  assert.equal(count(peer, 'bye peer'), 1);
  assert.equal(count(peer, 'poke'), 1);
  assert.deepEqual(messagesIn(join(mailboxes, 'peer')), [], 'nothing left to deliver again');
  assert.equal(readStatus(dir, 'peer')?.status.reason, 'StackEmpty');
  assert.deepEqual(messagesIn(join(mailboxes, 'sink')), ['boss.1.1.json']);
  assert.equal(count(prompts(bossRecord), 'collect:\n- boss-a: Succeeded'), 1);

  const metrics = readFileSync(metricsFile, 'utf8');
  assert.match(metrics, /episodic_ops_total\{namespace="default",op="spawn",result="applied"\} 2\n/);
  assert.match(metrics, /episodic_ops_total\{namespace="default",op="send",result="applied"\} 3\n/);
});
