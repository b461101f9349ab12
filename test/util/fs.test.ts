// Small filesystem helpers: a reused scratch file is rewritten in place, exactly, on the same inode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rewriteInPlace } from '../../controller/util/fs.ts';

test('rewriteInPlace: creates the file (0600), then replaces its contents exactly, keeping its inode', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'episodic-fs-')), 'prompt.md');
  rewriteInPlace(file, 'a long first prompt, with ü and ✓');
  const first = statSync(file);
  assert.equal(first.mode & 0o777, 0o600);
  assert.equal(readFileSync(file, 'utf8'), 'a long first prompt, with ü and ✓');
  rewriteInPlace(file, 'short');
  assert.equal(readFileSync(file, 'utf8'), 'short', 'no tail of the longer previous contents');
  rewriteInPlace(file, 'a longer one again, longer than before');
  assert.equal(readFileSync(file, 'utf8'), 'a longer one again, longer than before');
  rewriteInPlace(file, '');
  assert.equal(readFileSync(file, 'utf8'), '');
  assert.equal(statSync(file).ino, first.ino, 'same inode: nothing freed and allocated again');
});
