// The spec-dir source counts generations itself, from what the composition root recalls from the status
// files at start-up: it never reads the status store.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SpecDirSource } from '../../controller/sources/local/spec-dir-source.ts';
import { loadSpecDir } from '../../controller/sources/local/spec-files.ts';
import { tempDir } from '../support/local.ts';

function writeTask(dir: string, name: string, prompt: string): void {
  const doc = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name },
    spec: { prompt, agent: { command: ['true'] } },
  };
  writeFileSync(join(dir, `${name}.yaml`), JSON.stringify(doc));
}

describe('SpecDirSource generations', () => {
  it('go on from the record: the same spec keeps its generation, an edited one is one up', async () => {
    const dir = tempDir();
    writeTask(dir, 'same', 'a');
    writeTask(dir, 'edited', 'b');
    const loaded = await loadSpecDir(dir);
    const hash = (key: string) => loaded.tasks.get(key)?.specHash as string;
    const source = new SpecDirSource();
    source.recall(
      [
        { namespace: 'default', name: 'same', generation: 4, specHash: hash('default/same') },
        { namespace: 'default', name: 'edited', generation: 7, specHash: 'an older spec' },
      ],
      new Map(),
    );
    source.set(loaded);
    assert.equal(source.get('default/same')?.generation, 4);
    assert.equal(source.get('default/edited')?.generation, 8);
  });

  it('a removed task that comes back edited goes on counting; unchanged, it keeps its generation', async () => {
    const dir = tempDir();
    writeTask(dir, 'back', 'one');
    const source = new SpecDirSource();
    source.set(await loadSpecDir(dir));
    writeTask(dir, 'back', 'two');
    source.set(await loadSpecDir(dir));
    assert.equal(source.get('default/back')?.generation, 2);
    rmSync(join(dir, 'back.yaml'));
    source.set(await loadSpecDir(dir));
    assert.equal(source.get('default/back'), undefined);
    writeTask(dir, 'back', 'two');
    source.set(await loadSpecDir(dir));
    assert.equal(source.get('default/back')?.generation, 2, 'the spec it had');
    rmSync(join(dir, 'back.yaml'));
    source.set(await loadSpecDir(dir));
    writeTask(dir, 'back', 'three');
    source.set(await loadSpecDir(dir));
    assert.equal(source.get('default/back')?.generation, 3, 'a new spec');
  });

  it('a task whose status file is unreadable gets no spec, and the error says why', async () => {
    const dir = tempDir();
    writeTask(dir, 'blocked', 'x');
    const source = new SpecDirSource();
    source.recall([], new Map([['default/blocked', 'status/default/blocked.json: unreadable status file']]));
    source.set(await loadSpecDir(dir));
    const task = source.get('default/blocked');
    assert.equal(task?.spec, undefined);
    assert.match(
      task?.specError ?? '',
      /^cannot run: status\/default\/blocked\.json: unreadable status file; fix or remove/,
    );
  });
});
