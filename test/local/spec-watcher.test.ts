// The spec watcher against a real directory: what changes between the initial load and the end of
// chokidar's initial scan is not lost, and files that did not change are not re-read. Every wait is for an
// event the watcher reports, never a sleep.
import { strict as assert } from 'node:assert';
import { rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadSpecDir } from '../../controller/sources/local/spec-files.ts';
import type { LoadedSpecs } from '../../controller/sources/local/spec-files.ts';
import { SpecWatcher } from '../../controller/sources/local/spec-watcher.ts';
import { specDir, taskYaml, tempDir } from '../support/local.ts';

async function watched(dir: string, between: () => void) {
  let listeners: Array<(s: LoadedSpecs) => void> = [];
  const initial = await loadSpecDir(dir);
  between();
  const watcher = new SpecWatcher({
    dir,
    onChange: (s) => {
      for (const l of listeners) l(s);
    },
    debounceMs: 20,
  });
  watcher.seed(initial);
  await watcher.start();
  /** The first reported view that satisfies `done` (fails the test after 10 s without one). */
  const until = (done: (s: LoadedSpecs) => boolean) =>
    new Promise<LoadedSpecs>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the watcher reported no such change')), 10_000);
      listeners.push((s) => {
        if (!done(s)) return;
        clearTimeout(timer);
        listeners = [];
        resolve(s);
      });
    });
  return { watcher, until };
}

test('an edit, an add and a delete made while the watcher starts are all seen', async () => {
  const dir = specDir([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
  const { watcher, until } = await watched(dir, () => {
    writeFileSync(join(dir, 'a.yaml'), taskYaml({ name: 'a', spec: { prompt: 'edited' } }));
    writeFileSync(join(dir, 'd.yaml'), taskYaml({ name: 'd' }));
    rmSync(join(dir, 'c.yaml'));
  });
  try {
    const last = await until(
      (s) =>
        !s.tasks.has('default/c') && s.tasks.has('default/d') && s.tasks.get('default/a')?.spec?.prompt === 'edited',
    );
    assert.deepEqual([...last.tasks.keys()].sort(), ['default/a', 'default/b', 'default/d']);
  } finally {
    await watcher.close();
  }
});

test('files unchanged since the load are not re-read when the watcher starts', async () => {
  const dir = specDir([{ name: 'a' }, { name: 'b' }]);
  const a = join(dir, 'a.yaml');
  const then = new Date('2026-01-01T00:00:00.000Z'); // whole milliseconds: utimes can set it exactly
  utimesSync(a, then, then);
  const { watcher, until } = await watched(dir, () => {
    // New content, but the same size and mtime: to the watcher's comparison a.yaml is what the load read.
    const { size } = statSync(a);
    const text = taskYaml({ name: 'a', spec: { prompt: 'XXXXX' } });
    writeFileSync(a, text.padEnd(size, ' ').slice(0, size));
    utimesSync(a, then, then);
  });
  try {
    writeFileSync(join(dir, 'b.yaml'), taskYaml({ name: 'b', spec: { prompt: 'later' } }));
    const seen = await until((s) => s.tasks.get('default/b')?.spec?.prompt === 'later');
    assert.notEqual(seen.tasks.get('default/a')?.spec?.prompt, 'XXXXX', 'a.yaml was not re-read');
  } finally {
    await watcher.close();
  }
});

test('a spec file linked from outside DIR while watching is refused as the first load refuses it, never read', async () => {
  const dir = specDir([{ name: 'a' }]);
  const outside = tempDir();
  writeFileSync(join(outside, 'sneaky.yaml'), taskYaml({ name: 'sneaky' }));
  const { watcher, until } = await watched(dir, () =>
    symlinkSync(join(outside, 'sneaky.yaml'), join(dir, 'sneaky.yaml')),
  );
  try {
    const seen = await until((s) => s.errors.some((e) => e.includes('sneaky.yaml')));
    assert.ok(!seen.tasks.has('default/sneaky'), 'a task read through a link out of DIR');
    assert.match(seen.errors.join('\n'), /sneaky\.yaml: a symlink leading outside .*; not read/);
  } finally {
    await watcher.close();
  }
});
