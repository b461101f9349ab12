// The Gizmo examples (examples/gizmo, issue 20) run end to end with `episodic run`: their stand-in agents act
// only on what their prompts say, so what they write proves what the controller rendered ({{children}},
// {{messages}}, the stack's top frame) and applied (push, spawn, send, sleep).
import assert from 'node:assert/strict';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO, readStatus, runCli, tempDir } from '../support/local.ts';

/** A copy of one examples/gizmo example (its stand-in agents beside it) to run in. */
function gizmoCopy(example: string): string {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/gizmo'), dir, { recursive: true, filter: (src) => !/\/(ws|\.episodic)$/.test(src) });
  return join(dir, example);
}

interface EpisodeLine {
  number: number;
  startedAt: string;
  finishedAt: string;
  reason?: string;
  ops?: string[];
  outputs?: { [key: string]: string };
}

function records(dir: string, name: string): EpisodeLine[] {
  const file = join(dir, '.episodic', 'logs', 'default', name, 'episodes.jsonl');
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as EpisodeLine);
}

test('gizmo planner: pushes Spawn and Report, spawns three workers, waits, reads their WORDS from {{children}}', async () => {
  const dir = gizmoCopy('planner');
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);

  const planner = readStatus(dir, 'planner')?.status;
  assert.equal(planner?.phase, 'Succeeded');
  assert.equal(planner?.reason, 'StackEmpty');
  assert.equal(planner?.episodes, 3, 'Plan, Spawn, Report');
  const eps = records(dir, 'planner');
  assert.deepEqual(
    eps.map((r) => r.ops),
    [['push 2'], ['spawn alpha', 'spawn beta', 'spawn gamma'], undefined],
  );
  const words: { [worker: string]: string } = { alpha: '4', beta: '2', gamma: '5' };
  for (const [worker, count] of Object.entries(words)) {
    const name = `planner-${worker}`;
    const child = readStatus(dir, name);
    assert.equal(child?.status.phase, 'Succeeded', name);
    assert.equal(child?.status.outputs?.WORDS, count, name);
    // awaitChildren: the Report episode started only after every worker had ended.
    const [only] = records(dir, name);
    assert.ok(Date.parse(only?.finishedAt ?? '') <= Date.parse(eps[2]?.startedAt ?? ''), `${name} ended first`);
  }
  // The counts reached the planner only through {{children}} in its Report frame.
  assert.equal(
    readFileSync(join(dir, 'ws/planner/REPORT.md'), 'utf8'),
    'planner-alpha: 4 words\nplanner-beta: 2 words\nplanner-gamma: 5 words\ntotal: 11 words\n',
  );
  assert.deepEqual(planner?.outputs, { TOTAL: '11', WORKERS: '3' });
});

test('gizmo ping-pong: two players send balls back and forth (wake: onMessage) until ball 4, then both finish', async () => {
  const dir = gizmoCopy('pingpong');
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  for (const name of ['ping', 'pong']) {
    const s = readStatus(dir, name)?.status;
    assert.equal(s?.phase, 'Succeeded', name);
    assert.equal(s?.reason, 'PromiseDetected', name);
  }
  // Each "got ball N" line is the ball the player read in {{messages}}.
  assert.equal(
    readFileSync(join(dir, 'ws/ping/RALLY.log'), 'utf8'),
    'ping hits ball 1 to pong\nping got ball 2 from pong\nping hits ball 3 to pong\nping got ball 4 from pong\n',
  );
  assert.equal(
    readFileSync(join(dir, 'ws/pong/RALLY.log'), 'utf8'),
    'pong got ball 1 from ping\npong hits ball 2 to ping\npong got ball 3 from ping\npong hits ball 4 to ping\n',
  );
  assert.deepEqual(
    records(dir, 'ping').map((r) => r.ops),
    [['send pong'], ['send pong'], undefined],
  );
});

test('gizmo sleeper: the kettle episode sleeps 2 s (Sleeping), then the tea episode runs and the stack empties', async () => {
  const dir = gizmoCopy('sleeper');
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  const s = readStatus(dir, 'tea')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.reason, 'StackEmpty');
  const [kettle, tea] = records(dir, 'tea');
  assert.deepEqual([kettle?.reason, kettle?.ops], ['Sleeping', ['sleep 2s']]);
  assert.equal(tea?.reason, 'StackEmpty');
  const slept = Date.parse(tea?.startedAt ?? '') - Date.parse(kettle?.finishedAt ?? '');
  assert.ok(slept >= 2000, `the next episode started ${slept} ms after the sleep op`);
  const log = readFileSync(join(dir, 'ws/tea/KETTLE.log'), 'utf8').trim().split('\n');
  assert.deepEqual(
    log.map((l) => l.slice(25)),
    ['Put the kettle on. It boils in 2 seconds; sleep until then.', 'Pour the tea.'],
  );
});
