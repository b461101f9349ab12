// The shipped examples stay valid, and the offline demo really finishes its work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, readStatus, runCli, tempDir } from '../support/local.ts';

test('every example spec validates', async () => {
  const dirs = readdirSync(join(REPO, 'examples'), { withFileTypes: true }).filter((d) => d.isDirectory());
  const files = dirs.flatMap((d) =>
    readdirSync(join(REPO, 'examples', d.name)).filter((f) => f.endsWith('.yaml')).map((f) => join(REPO, 'examples', d.name, f)),
  );
  assert.ok(files.length >= 5);
  const res = await runCli(['validate', ...files]);
  assert.equal(res.code, 0, res.stderr);
});

test('the offline demo works through each plan, one item per episode, and exits 0', async () => {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/demo'), dir, { recursive: true, filter: (src) => !/\/(ws|\.episodic)$/.test(src) });
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);
  for (const name of ['build-parser', 'write-docs']) {
    const s = readStatus(dir, name)?.status;
    assert.equal(s?.phase, 'Succeeded');
    assert.equal(s?.episodes, 3, 'three plan items, one per episode');
    assert.doesNotMatch(readFileSync(join(dir, 'ws', name, 'PLAN.md'), 'utf8'), /- \[ \]/);
  }
});

test('the leash example: the plan finishes on its checklist, the stuck and the over-claiming agents trip the breaker', async () => {
  const dir = tempDir();
  cpSync(join(REPO, 'examples/leash'), dir, { recursive: true, filter: (src) => !/\/(ws|\.episodic)$/.test(src) });
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 1, res.stderr);
  const plan = readStatus(dir, 'ticks-plan')?.status;
  assert.equal(plan?.phase, 'Succeeded');
  assert.equal(plan?.reason, 'ChecklistComplete');
  assert.deepEqual([plan?.progress?.done, plan?.progress?.total], [3, 3]);
  for (const name of ['stuck', 'claims-done']) {
    const s = readStatus(dir, name)?.status;
    assert.equal(s?.phase, 'NeedsReview', name);
    assert.equal(s?.reason, 'CircuitOpen', name);
    assert.equal(s?.episodes, 3, name);
  }
  const rejected = (res.stdout + res.stderr).split('\n').filter((l) => l.includes('"CompletionRejected"') && l.includes('claims-done'));
  assert.equal(rejected.length, 3, 'every claim without a change is rejected');
});
