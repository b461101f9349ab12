// The spec watcher against a real directory: what changes between the initial load and the end of
// chokidar's initial scan is not lost, and files that did not change are not re-read.
import { strict as assert } from 'node:assert';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadSpecDir } from '../../controller/sources/spec-files.ts';
import type { LoadedSpecs } from '../../controller/sources/spec-files.ts';
import { SpecWatcher } from '../../controller/sources/spec-watcher.ts';
import { specDir, taskYaml } from '../support/local.ts';

async function watched(dir: string, between: () => void) {
  const changes: LoadedSpecs[] = [];
  const initial = await loadSpecDir(dir);
  between();
  const watcher = new SpecWatcher({ dir, onChange: (s) => changes.push(s), debounceMs: 20 });
  watcher.seed(initial);
  await watcher.start();
  return { changes, initial, watcher };
}

test('an edit, an add and a delete made while the watcher starts are all seen', async () => {
  const dir = specDir([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
  const { changes, watcher } = await watched(dir, () => {
    writeFileSync(join(dir, 'a.yaml'), taskYaml({ name: 'a', spec: { prompt: 'edited' } }));
    writeFileSync(join(dir, 'd.yaml'), taskYaml({ name: 'd' }));
    rmSync(join(dir, 'c.yaml'));
  });
  try {
    for (let i = 0; i < 100 && changes.length === 0; i++) await sleep(20);
    const last = changes.at(-1);
    assert.ok(last, 'no change reported');
    assert.deepEqual([...last.tasks.keys()].sort(), ['default/a', 'default/b', 'default/d']);
    assert.equal(last.tasks.get('default/a')?.spec?.prompt, 'edited');
  } finally {
    await watcher.close();
  }
});

test('files unchanged since the load are not re-read when the watcher starts', async () => {
  const dir = specDir([{ name: 'a' }, { name: 'b' }]);
  const { changes, watcher } = await watched(dir, () => undefined);
  try {
    await sleep(300);
    assert.equal(changes.length, 0);
    writeFileSync(join(dir, 'b.yaml'), taskYaml({ name: 'b', spec: { prompt: 'later' } }));
    for (let i = 0; i < 100 && changes.length === 0; i++) await sleep(20);
    assert.equal(changes.at(-1)?.tasks.get('default/b')?.spec?.prompt, 'later');
  } finally {
    await watcher.close();
  }
});
