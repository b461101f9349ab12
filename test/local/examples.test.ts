// The shipped examples stay valid, and the offline demo really finishes its work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, readStatus, runCli, tempDir } from '../support/local.ts';

test('every example spec validates', async () => {
  const files = ['examples/demo', 'examples/agents'].flatMap((d) =>
    readdirSync(join(REPO, d)).filter((f) => f.endsWith('.yaml')).map((f) => join(REPO, d, f)),
  );
  assert.ok(files.length >= 4);
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
