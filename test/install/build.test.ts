// scripts/build.mjs on a copy of the checkout: a rebuild is atomic for every episodic that starts meanwhile,
// and `prepare` (which npm also runs on `npx episodic` in a checkout) leaves an up-to-date dist/ alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from '../support/local.ts';

const run = promisify(execFile);
const NODE = process.execPath;

function checkout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'episodic-build-'));
  for (const part of ['bin', 'controller', 'scripts', 'package.json', 'package-lock.json'])
    cpSync(join(REPO, part), join(dir, part), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}
const build = (dir: string, ...args: string[]) =>
  execFileSync(NODE, [join(dir, 'scripts/build.mjs'), ...args], { cwd: dir, encoding: 'utf8' });
const mainStat = (dir: string) => statSync(join(dir, 'dist/cli/main.js'));

test('prepare builds a fresh checkout, then leaves an up-to-date dist/ alone; a changed source rebuilds it', () => {
  const dir = checkout();
  build(dir, '--if-stale');
  const first = mainStat(dir);
  assert.match(build(dir, '--if-stale'), /dist\/ is up to date/);
  assert.deepEqual([mainStat(dir).ino, mainStat(dir).mtimeMs], [first.ino, first.mtimeMs], 'main.js untouched');
  appendFileSync(join(dir, 'controller/version.ts'), '\n// changed\n');
  assert.doesNotMatch(build(dir, '--if-stale'), /up to date/);
  assert.notEqual(mainStat(dir).ino, first.ino, 'rebuilt');
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.startsWith('dist.build-')),
    [],
    'no staging directory left',
  );
});

test('episodic starting while dist/ is rebuilt always loads a whole build (old or new)', async () => {
  const dir = checkout();
  build(dir);
  let rebuilding = true;
  const starts: Array<{ ok: boolean; why?: string }> = [];
  // `get` loads main.js and then its lazy chunk: a half-replaced build would fail one or the other.
  const starter = (async () => {
    while (rebuilding) {
      const r = await run(NODE, [join(dir, 'bin/episodic.js'), 'get', dir]).then(
        () => ({ ok: true }),
        (e: { code?: number; stderr?: string }) => ({
          ok: e.code === 1 && !/not built|SyntaxError|Cannot find|does not provide/.test(e.stderr ?? ''),
          why: e.stderr,
        }),
      );
      starts.push(r);
    }
  })();
  for (let i = 0; i < 3; i++) {
    appendFileSync(join(dir, 'controller/cli/get.ts'), `\n// rebuild ${i}\n`); // new hashes for main and get's chunk
    await run(NODE, [join(dir, 'scripts/build.mjs')], { cwd: dir });
  }
  rebuilding = false;
  await starter;
  assert.ok(starts.length >= 3, `starts during the rebuilds: ${starts.length}`);
  const failed = starts.filter((s) => !s.ok);
  assert.deepEqual(failed, [], `${failed.length} of ${starts.length} starts failed`);
  // The previous build's chunks stay for processes that started on it; older ones go.
  assert.ok(existsSync(join(dir, 'dist/cli/main.js')));
});
