// The one atomic write: a reader sees the old file or the new one, never half of one, and two writers of one
// file never share a temp file (the fixed `FILE.tmp` of the trigger-status and blackboard writers did).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { test } from 'node:test';
import { createFileOnce, tempPathFor, writeFileAtomicSync } from '../../controller/util/atomic-write.ts';

const fresh = () => mkdtempSync(join(tmpdir(), 'episodic-atomic-'));

test('tempPathFor: beside the file, hidden, ending .tmp, a new name each time', () => {
  const a = tempPathFor('/s/status/ns/t.json');
  const b = tempPathFor('/s/status/ns/t.json');
  assert.notEqual(a, b);
  assert.equal(dirname(a), '/s/status/ns');
  assert.match(basename(a), /^\.t\.json\.[0-9a-f-]{36}\.tmp$/);
});

test('writeFileAtomicSync: makes the directory, replaces the file whole, leaves no temp file', () => {
  const file = join(fresh(), 'ns', 'x.json');
  writeFileAtomicSync(file, 'first', { mode: 0o600 });
  writeFileAtomicSync(file, 'second', { mode: 0o600 });
  assert.equal(readFileSync(file, 'utf8'), 'second');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(dirname(file)), ['x.json']);
});

test('writeFileAtomicSync: a rename that fails throws and removes its temp file', () => {
  const dir = fresh();
  mkdirSync(join(dir, 'taken', 'inside'), { recursive: true }); // a non-empty directory cannot be renamed over
  assert.throws(() => writeFileAtomicSync(join(dir, 'taken'), 'x'));
  assert.deepEqual(readdirSync(dir), ['taken']);
});

test('createFileOnce: the first creator wins, a second is told "exists", no temp file is left', () => {
  const file = join(fresh(), 'ns', 'm.json');
  assert.equal(createFileOnce(file, 'one'), 'created');
  assert.equal(createFileOnce(file, 'two'), 'exists');
  assert.equal(readFileSync(file, 'utf8'), 'one');
  assert.deepEqual(readdirSync(dirname(file)), ['m.json']);
});

/** A process that replaces `file` `times` times with a JSON body naming `who`. */
function writer(file: string, who: string, times: number): Promise<{ code: number | null; stderr: string }> {
  const module = new URL('../../controller/util/atomic-write.ts', import.meta.url).href;
  const body = JSON.stringify({ who, pad: 'x'.repeat(64 * 1024) });
  const code = `const { writeFileAtomicSync } = await import(${JSON.stringify(module)});
    for (let i = 0; i < ${times}; i++) writeFileAtomicSync(${JSON.stringify(file)}, ${JSON.stringify(body)});`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((done) => child.on('close', (c) => done({ code: c, stderr })));
}

test('two processes replacing one file at once: neither fails, and every read is a whole file', async () => {
  const file = join(fresh(), 'triggers', 'ns', 'tr.json');
  writeFileAtomicSync(file, JSON.stringify({ who: 'start' }));
  let reading = true;
  let reads = 0;
  const reader = (async () => {
    while (reading) {
      const who = (JSON.parse(readFileSync(file, 'utf8')) as { who: string }).who; // a torn file throws here
      assert.ok(['start', 'a', 'b'].includes(who));
      reads++;
      await new Promise((r) => setImmediate(r));
    }
  })();
  const results = await Promise.all([writer(file, 'a', 400), writer(file, 'b', 400)]);
  reading = false;
  await reader;
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  assert.ok(reads > 0);
  assert.deepEqual(readdirSync(dirname(file)), ['tr.json']);
});
