// Resume requests and suspend holds are watched, not polled: with the resync set to an hour, a request or a hold
// written (in a namespace directory that exists, is new, or was removed and made again) is still seen, so the
// watch saw it. Files there before the start are read at once; a rewrite is seen again, an unchanged file not.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import type { SuspendHold } from '../../controller/api/hold.ts';
import type { ResumeRequest } from '../../controller/api/resume.ts';
import { HoldWatch, writeHold } from '../../controller/sources/local/hold-files.ts';
import { ResumeRequestWatch, writeResumeRequest } from '../../controller/sources/local/resume-requests.ts';
import { holdDir } from '../../controller/util/state-layout.ts';
import { tempDir } from '../support/local.ts';
import { waitFor } from '../support/wait.ts';

// Far longer than waitFor's 30 s: whatever is seen within a test was reported by the watch.
const NO_RESYNC = { resyncMs: 3_600_000, pollMs: 3_600_000 };

test('state-file watch: a resume request is seen as it is written, without a resync', async () => {
  const stateDir = tempDir();
  writeResumeRequest(stateDir, 'default', 'before', { token: 't0', by: 'ann' });
  const seen = new Map<string, ResumeRequest | undefined>();
  const errors: string[] = [];
  const watch = new ResumeRequestWatch(
    stateDir,
    (key, r) => seen.set(key, r),
    (m) => errors.push(m),
    NO_RESYNC,
  );
  watch.start();
  try {
    assert.equal(seen.get('default/before')?.token, 't0', 'a request made before the start is read at start');
    assert.equal(watch.polls, false, 'the directory is watched');
    writeResumeRequest(stateDir, 'default', 'a', { token: 't1', by: 'ann' });
    await waitFor('the request in an existing namespace', () => seen.get('default/a')?.token === 't1');
    writeResumeRequest(stateDir, 'team', 'b', { token: 't2', by: 'bob' });
    await waitFor('the request in a new namespace', () => seen.get('team/b')?.token === 't2');
    writeResumeRequest(stateDir, 'default', 'a', { token: 't3', by: 'ann', episodes: 2 });
    await waitFor('the rewritten request', () => seen.get('default/a')?.token === 't3');
    assert.equal(seen.get('default/a')?.episodes, 2);
    assert.deepEqual(errors, []);
  } finally {
    watch.stop();
  }
});

test('state-file watch: a hold and its lifting are seen, also in a namespace directory made again', async () => {
  const stateDir = tempDir();
  const seen: Array<[string, SuspendHold | undefined]> = [];
  const watch = new HoldWatch(
    stateDir,
    (key, h) => seen.push([key, h]),
    () => {},
    NO_RESYNC,
  );
  watch.start();
  const last = (key: string) => seen.filter(([k]) => k === key).at(-1)?.[1];
  try {
    writeHold(stateDir, 'default', 'a', { suspended: true, by: 'ann' });
    await waitFor('the hold', () => last('default/a')?.suspended === true);
    writeHold(stateDir, 'default', 'a', { suspended: false, by: 'bob' });
    await waitFor('the lifted hold', () => last('default/a')?.suspended === false);
    assert.equal(last('default/a')?.by, 'bob');
    rmSync(`${holdDir(stateDir)}/default`, { recursive: true });
    writeHold(stateDir, 'default', 'c', { suspended: true, by: 'cy' });
    await waitFor('a hold in the namespace made again', () => last('default/c')?.suspended === true);
    writeHold(stateDir, 'default', 'c', { suspended: false, by: 'cy' });
    await waitFor('and its next write, through the new directory watch', () => last('default/c')?.suspended === false);
    const count = seen.length;
    watch.scan(); // a resync over files already seen announces nothing
    assert.equal(seen.length, count);
  } finally {
    watch.stop();
  }
});
