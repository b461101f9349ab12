// Agent ops end to end in local mode (`episodic run`, real processes, the ops stand-in agent): a stack task
// whose first frame decomposes itself (push) and writes the blackboard (set), whose next frame reads it
// ({{bb.KEY}}), deletes it and sleeps, until the stack is empty; a hostile line rejected into the record.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir, tempDir } from '../support/local.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;

function lines<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);
}

test('local: push decomposes the stack, set/del write the blackboard that {{bb.KEY}} reads, sleep waits, StackEmpty ends it', async () => {
  const record = join(tempDir(), 'prompts.jsonl');
  const partA = [
    'part A: the plan is {{bb.plan}}',
    op({ op: 'del', key: 'plan' }),
    op({ op: 'sleep', seconds: 1 }),
  ].join('\n');
  const plan = [
    'plan the work',
    op({ op: 'push', frames: [partA, { prompt: 'part B of {{vars.what}}', vars: { what: 'the build' } }] }),
    op({ op: 'set', key: 'plan', value: 'v1' }),
  ].join('\n');
  const ship = ['ship it (depth {{stack.depth}})', '@raw {"op":"spawn","name":"../escape","prompt":"sk-SECRET"}'].join(
    '\n',
  );
  const dir = specDir([
    {
      name: 'stacky',
      spec: {
        prompt: undefined,
        stack: [plan, ship],
        agent: { command: [NODE, OPS_AGENT], output: 'text', env: [{ name: 'OPS_AGENT_RECORD', value: record }] },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stdout + res.stderr);
  assert.ok(!(res.stdout + res.stderr).includes('sk-SECRET'), 'a payload never reaches the log');

  const status = readStatus(dir, 'stacky')?.status;
  assert.equal(status?.phase, 'Succeeded');
  assert.equal(status?.reason, 'StackEmpty');
  assert.equal(status?.episodes, 4);
  assert.deepEqual(status?.stack, { depth: 0, top: [], frames: [] });
  assert.equal(status?.pendingOps, undefined);

  const prompts = lines<{ episode: number; prompt: string }>(record);
  assert.deepEqual(
    prompts.map((p) => p.episode),
    [1, 2, 3, 4],
  );
  assert.match(prompts[0]?.prompt ?? '', /## Context[\s\S]*1\. ship it[\s\S]*## Task\n\nplan the work/);
  assert.match(prompts[1]?.prompt ?? '', /## Task\n\npart A: the plan is v1\n/);
  assert.match(prompts[1]?.prompt ?? '', /1\. part B of \{\{vars.what\}\}\n2\. ship it \(depth 3\)/);
  assert.match(prompts[2]?.prompt ?? '', /## Task\n\npart B of the build/);
  assert.match(prompts[3]?.prompt ?? '', /## Task\n\nship it \(depth 1\)/);

  const board = JSON.parse(readFileSync(join(dir, '.episodic', 'blackboard', 'default.json'), 'utf8'));
  assert.deepEqual(board, { entries: {}, applied: { stacky: 2 } });

  type Rec = { number: number; startedAt: string; finishedAt: string; ops?: string[]; opsRejected?: string };
  const records = lines<Rec>(join(dir, '.episodic', 'logs', 'default', 'stacky', 'episodes.jsonl'));
  assert.deepEqual(records[0]?.ops, ['push 2', 'set plan']);
  assert.deepEqual(records[1]?.ops, ['del plan', 'sleep 1s']);
  const slept = Date.parse(records[2]?.startedAt ?? '') - Date.parse(records[1]?.finishedAt ?? '');
  assert.ok(slept >= 900, `episode 3 started ${slept} ms after episode 2 ended`);
  assert.match(records[3]?.opsRejected ?? '', /line 1: spawn: name: must be a lowercase DNS label/);
  assert.ok(!JSON.stringify(records).includes('sk-SECRET'));
});

test('local: a hostile agent floods $EPISODIC_OPS (2 MiB of huge, broken, unknown and path-name lines): bounded rejections, the task goes on', async () => {
  const dir = specDir([
    {
      name: 'flood',
      spec: {
        prompt: undefined,
        stack: ['@flood 2048', 'second'],
        agent: { command: [NODE, OPS_AGENT], output: 'text' },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stdout + res.stderr);
  assert.ok(!(res.stdout + res.stderr).includes('rm -rf'), 'no payload in the log');
  const status = readStatus(dir, 'flood')?.status;
  assert.equal(status?.reason, 'StackEmpty');
  type Rec = { ops?: string[]; opsRejected?: string };
  const [first] = lines<Rec>(join(dir, '.episodic', 'logs', 'default', 'flood', 'episodes.jsonl'));
  assert.ok((first?.ops?.length ?? 0) <= 32);
  assert.ok((first?.opsRejected?.length ?? 0) <= 1000);
  assert.match(
    first?.opsRejected ?? '',
    /line 1: line longer than 16384 characters; line 2: not valid JSON; line 3: unknown op "exec"/,
  );
  assert.match(first?.opsRejected ?? '', /more lines rejected/);
});
