// Spec files mounted the way Kubernetes mounts a ConfigMap (task.yaml → ..data/task.yaml, ..data → a
// timestamped directory) are read by run, get and validate alike; a link leading out of DIR is refused by
// name, never read (issue 12, item 10).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus, runCli, specDir, taskYaml, tempDir } from '../support/local.ts';

function configMapDir(): string {
  const dir = specDir([{ name: 'mounted', script: { default: { mode: 'success' } } }]);
  mkdirSync(join(dir, '..2026_11_23_08_00_00.1'));
  renameSync(join(dir, 'mounted.yaml'), join(dir, '..2026_11_23_08_00_00.1', 'mounted.yaml'));
  symlinkSync('..2026_11_23_08_00_00.1', join(dir, '..data'));
  symlinkSync('..data/mounted.yaml', join(dir, 'mounted.yaml'));
  return dir;
}

test('a ConfigMap-style mount: run, get and validate all see the task', async () => {
  const dir = configMapDir();
  const validate = await runCli(['validate', dir]);
  assert.equal(validate.code, 0, validate.stderr);
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(readStatus(dir, 'mounted')?.status.phase, 'Succeeded');
  const get = await runCli(['get', dir]);
  assert.match(get.stdout, /mounted\s+Succeeded/);
});

test('a spec link leading outside DIR is an error naming it, and is not read; the tasks beside it run', async () => {
  const dir = configMapDir();
  const outside = tempDir();
  writeFileSync(join(outside, 'elsewhere.yaml'), taskYaml({ name: 'elsewhere' }));
  symlinkSync(join(outside, 'elsewhere.yaml'), join(dir, 'elsewhere.yaml'));
  const validate = await runCli(['validate', dir]);
  assert.equal(validate.code, 2);
  assert.ok(
    validate.stderr.includes(`${join(dir, 'elsewhere.yaml')}: a symlink leading outside ${dir}; not read`),
    validate.stderr,
  );
  const run = await runCli(['run', dir]);
  assert.equal(run.code, 1, 'an unreadable spec file is not success');
  assert.equal(readStatus(dir, 'mounted')?.status.phase, 'Succeeded');
  assert.equal(readStatus(dir, 'elsewhere'), undefined);
});
