// The test command's second reporter (scripts/test-reporters/slowest.ts): the slowest files of a real
// node:test run, slowest first, beside spec's output, which still ends with its summary lines.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { slowestTable, suitesTable } from '../../scripts/test-reporters/slowest.ts';

const REPORTER = fileURLToPath(new URL('../../scripts/test-reporters/slowest.ts', import.meta.url));

test('slowestTable: the ten slowest, slowest first, relative paths, failed files marked', () => {
  const files = Array.from({ length: 12 }, (_, i) => ({
    file: `/r/test/f${i}.test.ts`,
    ms: i * 1000,
    failed: i === 11,
  }));
  const lines = slowestTable(files, '/r').trimEnd().split('\n');
  assert.equal(lines[0], "slowest 10 of 12 test files (wall time of each file's process):");
  assert.equal(lines.length, 11);
  assert.equal(lines[1], '    11.0 s  test/f11.test.ts  (failed)');
  assert.equal(lines[10], '     2.0 s  test/f2.test.ts');
});

test('suitesTable: files summed by folder, largest first, with their count', () => {
  const files = [
    { file: '/r/test/a/x.test.ts', ms: 1000, failed: false },
    { file: '/r/test/b/y.test.ts', ms: 2500, failed: false },
    { file: '/r/test/a/z.test.ts', ms: 2000, failed: true },
  ];
  assert.deepEqual(suitesTable(files, '/r').trimEnd().split('\n').slice(1), [
    '     3.0 s  test/a (2 files)',
    '     2.5 s  test/b (1 files)',
  ]);
});

test('a real run: spec still ends with its summary, the table names each file with its duration', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'episodic-reporter-'));
  try {
    const wait = (ms: number) => `await new Promise((r) => setTimeout(r, ${ms}));`;
    writeFileSync(
      path.join(dir, 'slow.test.mjs'),
      `import { test } from 'node:test';\ntest('s', async () => { ${wait(600)} });\n`,
    );
    writeFileSync(path.join(dir, 'quick.test.mjs'), `import { test } from 'node:test';\ntest('q', () => {});\n`);
    const out = path.join(dir, 'slowest.txt');
    const argv = ['--test', '--test-reporter=spec', '--test-reporter-destination=stdout'];
    argv.push(`--test-reporter=${REPORTER}`, `--test-reporter-destination=${out}`, 'slow.test.mjs', 'quick.test.mjs');
    // Without the parent runner's context, or the child reports to it instead of running its own reporters.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, argv, { cwd: dir, env }, (err, so) => (err ? reject(err) : resolve(so))),
    );
    assert.match(stdout, /ℹ tests 2\nℹ suites 0\nℹ pass 2\n[\s\S]*ℹ duration_ms [\d.]+\n$/);
    const [head, first, second, suites, folder] = readFileSync(out, 'utf8').trimEnd().split('\n');
    assert.equal(head, "slowest 2 of 2 test files (wall time of each file's process):");
    assert.match(first, /^ +\d+\.\d s {2}slow\.test\.mjs$/);
    assert.match(second, /^ +\d+\.\d s {2}quick\.test\.mjs$/);
    assert.ok(Number.parseFloat(first) >= 0.6, first);
    assert.match(suites, /^time per suite/);
    assert.match(folder, /^ +\d+\.\d s {2}\. \(2 files\)$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
