// spawn and send through the op channel with `episodic run` (the ops stand-in agent writes $EPISODIC_OPS):
// a planner spawns two workers, waits for them and collects {{children}}; two tasks talk through send, the
// receiver with wake: onMessage; a hostile planner's escapes are rejected into its record.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { NODE, REPO, readStatus, runCli, specDir, tempDir } from '../support/local.ts';

const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');
const op = (v: unknown) => `@op ${JSON.stringify(v)}`;
const prompts = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { episode: number; prompt: string });

test('local: a planner spawns two workers, waits for them, and its next frame gets {{children}}', async () => {
  const record = join(tempDir(), 'prompts.jsonl');
  const spawnFrame = [
    'split the work',
    op({ op: 'spawn', name: 'a', stack: ['do part a'] }),
    op({ op: 'spawn', name: 'b', stack: ['do part b'], limits: { maxEpisodes: 2 } }),
  ].join('\n');
  const dir = specDir([
    {
      name: 'planner',
      spec: {
        prompt: undefined,
        stack: [spawnFrame, 'collect:\n{{children}}'],
        agent: { command: [NODE, OPS_AGENT], output: 'text', env: [{ name: 'OPS_AGENT_RECORD', value: record }] },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stdout + res.stderr);
  for (const name of ['planner', 'planner-a', 'planner-b'])
    assert.equal(readStatus(dir, name)?.status.phase, 'Succeeded', name);
  const planner = prompts(record).filter((p) => p.prompt.includes('## Task\n\ncollect:'));
  assert.equal(planner.length, 1, 'the collecting frame ran once, after both children ended');
  assert.match(
    planner[0]?.prompt ?? '',
    /collect:\n- planner-a: Succeeded\n {2}last message: ops-agent: episode 1 done\n- planner-b: Succeeded/,
  );
  const got = await runCli(['get', dir, '-o', 'json']);
  const items = (
    JSON.parse(got.stdout) as { items: Array<{ metadata: { name: string; labels?: Record<string, string> } }> }
  ).items;
  assert.deepEqual(
    items
      .filter((i) => i.metadata.labels?.['episodic.dev/parent'] === 'planner')
      .map((i) => i.metadata.name)
      .sort(),
    ['planner-a', 'planner-b'],
  );
});

test('local: two tasks talk through send; the receiver (wake: onMessage) waits until the message arrives', async () => {
  const tmp = tempDir();
  const record = join(tmp, 'prompts.jsonl');
  const ready = join(tmp, 'bob-ready');
  const agent = { command: [NODE, OPS_AGENT], output: 'text', env: [{ name: 'OPS_AGENT_RECORD', value: record }] };
  const dir = specDir([
    {
      name: 'alice',
      spec: {
        prompt: undefined,
        stack: [`@wait ${ready}\n${op({ op: 'send', to: 'bob', message: 'the API is ready' })}`],
        agent,
      },
    },
    {
      name: 'bob',
      spec: {
        prompt: undefined,
        wake: 'onMessage',
        stack: [`start\n@touch ${ready}`, 'reply to:\n{{messages}}'],
        agent,
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stdout + res.stderr);
  assert.equal(readStatus(dir, 'bob')?.status.phase, 'Succeeded');
  const reply = prompts(record).find((p) => p.prompt.includes('## Task\n\nreply to:'));
  assert.match(reply?.prompt ?? '', /reply to:\nfrom alice at \S+:\nthe API is ready/);
});

test('local: a hostile planner (a path as a name, raised limits, a spawn storm, a huge message) is bounded', async () => {
  const storm = Array.from({ length: 12 }, (_, i) => op({ op: 'spawn', name: `s${i}`, stack: ['x'] }));
  const frame = [
    'attack',
    '@raw {"op":"spawn","name":"../escape","prompt":"sk-SECRET-1"}',
    op({ op: 'spawn', name: 'rich', stack: ['x'], limits: { maxEpisodes: 1000 } }),
    `@raw {"op":"send","to":"planner","message":"${'z'.repeat(5000)}"}`,
    ...storm,
  ].join('\n');
  const dir = specDir([
    {
      name: 'evil',
      spec: {
        prompt: undefined,
        stack: [frame],
        limits: { maxEpisodes: 5, maxChildren: 3 },
        agent: { command: [NODE, OPS_AGENT], output: 'text' },
      },
    },
  ]);
  const res = await runCli(['run', dir]);
  assert.ok(!(res.stdout + res.stderr).includes('sk-SECRET'), 'a payload never reaches the log');
  const children = ['s0', 's1', 's2', 's3'].filter((s) => readStatus(dir, `evil-${s}`));
  assert.deepEqual(children, ['s0', 's1', 's2'], 'maxChildren 3');
  assert.equal(readStatus(dir, 'evil-rich'), undefined);
  const events = res.stdout + res.stderr;
  assert.match(events, /maxEpisodes 1000 is above the parent's 5/);
  assert.match(events, /maxChildren 3 reached/);
  // Refused while applying, yet given: the record, the status and `get --episodes` say which and why (issue 28).
  type Rec = { number: number; ops?: string[]; opsRejected?: string };
  const [first] = lines<Rec>(join(dir, '.episodic', 'logs', 'default', 'evil', 'episodes.jsonl'));
  assert.deepEqual(first?.ops?.slice(0, 5), [
    'spawn rich (rejected)',
    'spawn s0',
    'spawn s1',
    'spawn s2',
    'spawn s3 (rejected)',
  ]);
  assert.equal(first?.ops?.filter((w) => w.endsWith(' (rejected)')).length, 10);
  assert.match(
    first?.opsRejected ?? '',
    /^line 1: spawn: name: .*; spawn rich: limits.maxEpisodes 1000 is above the parent's 5; spawn s3: maxChildren 3 reached;/,
  );
  assert.match(first?.opsRejected ?? '', /; 3 more ops refused while applying$/);
  const last = readStatus(dir, 'evil')?.status.lastEpisode;
  assert.deepEqual(last?.ops, first?.ops);
  assert.equal(last?.opsRejected, first?.opsRejected);
  const get = await runCli(['get', 'evil', dir, '--episodes']);
  assert.match(get.stdout, /OPS/);
  assert.match(get.stdout, /\b3 applied, 10 rejected\b/);
  assert.match(get.stdout, /episode 1: ops rejected: line 1: spawn: name: .*spawn s3: maxChildren 3 reached/);
  assert.ok(!(get.stdout + JSON.stringify(first)).includes('sk-SECRET'));
});

function lines<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);
}
