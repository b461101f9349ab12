// The one file follower: FileTail reads a growing file from a given byte to the size it has at stop();
// the runner's followFile copies a log to stdout with it, waiting for the log to appear.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { followFile } from '../../controller/runner/follow-file.ts';
import { FileTail } from '../../controller/util/file-tail.ts';

const fresh = () => mkdtempSync(join(tmpdir(), 'episodic-tail-'));

async function collect(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

test('FileTail: starts at the given byte, follows appends, ends at the size the file has at stop()', async () => {
  const file = join(fresh(), 'spool');
  writeFileSync(file, 'old part|');
  const tail = new FileTail(file, 'old part|'.length);
  const got = collect(tail);
  appendFileSync(file, 'new one');
  await new Promise((r) => tail.once('readable', r)); // the append was seen before stop()
  appendFileSync(file, ', and more');
  tail.stop();
  assert.equal(await got, 'new one, and more');
});

test('followFile: waits for a file made later, copies from the byte given, and stop() copies the rest', async () => {
  const file = join(fresh(), 'episode-1.log');
  const out = new PassThrough();
  const copied = collect(out);
  const follower = followFile(file, out, 4);
  writeFileSync(file, 'skipfirst line\n');
  appendFileSync(file, 'second line\n');
  await follower.stop();
  out.end();
  assert.equal(await copied, 'first line\nsecond line\n');
});

test('followFile: a file that never appears ends quietly at stop()', async () => {
  const out = new PassThrough();
  const copied = collect(out);
  await followFile(join(fresh(), 'never'), out).stop();
  out.end();
  assert.equal(await copied, '');
});
