// A state dir on a read-only mount (a real read-only tmpfs, in an unprivileged user + mount namespace) is
// named as such with what to do, not reported as a bare errno (issue 12, item 10).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { cliEntry } from '../support/cli-entry.ts';
import { NODE, specDir } from '../support/local.ts';

test('episodic run with a read-only state dir: exit 2, one line naming the directory and --state-dir', () => {
  const dir = specDir([{ name: 'a', script: { default: { mode: 'success' } } }]);
  const state = join(dir, 'ro-state');
  mkdirSync(state);
  // The script is fixed; paths go in as positional arguments, never into the shell text.
  const script = 'mount -t tmpfs -o ro,size=1m tmpfs "$1" && exec "$2" "$3" run "$4" --state-dir "$1" --no-table';
  const res = spawnSync(
    'unshare',
    ['--user', '--map-root-user', '--mount', 'sh', '-c', script, 'sh', state, NODE, cliEntry(), dir],
    { encoding: 'utf8' },
  );
  assert.equal(res.status, 2, res.stderr);
  assert.equal(
    res.stderr.trim(),
    `episodic run: the state dir ${state} is on a read-only file system (EROFS); pass --state-dir with a writable directory`,
  );
});

test('episodic run on a read-only spec dir: the default DIR/.episodic it cannot create is named as read-only, not ENOENT', () => {
  const dir = specDir([{ name: 'a', script: { default: { mode: 'success' } } }]);
  // A spec dir mounted read-only (like a ConfigMap volume): a bind mount of dir onto itself, read-only.
  const script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" "$3" run "$1" --no-table';
  const res = spawnSync(
    'unshare',
    ['--user', '--map-root-user', '--mount', 'sh', '-c', script, 'sh', dir, NODE, cliEntry()],
    {
      encoding: 'utf8',
    },
  );
  assert.equal(res.status, 2, res.stderr);
  assert.equal(
    res.stderr.trim(),
    `episodic run: the state dir ${join(dir, '.episodic')} is on a read-only file system (EROFS); pass --state-dir with a writable directory`,
  );
});
