// The generated corpus of bad spec files (test/support/bad-specs.ts) in one spec directory beside good tasks:
// validate names every bad file (and its field) in one escaped, bounded line each, and run — no crash, no
// stack trace — still runs the good tasks to Succeeded (issue 12).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { badSpecCorpus } from '../support/bad-specs.ts';
import { readStatus, runCli, specDir } from '../support/local.ts';

const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const GOOD = ['good-1', 'good-2', 'good-3'];

test('bad-spec corpus: every bad file named with its field; the good tasks beside them still run', async () => {
  const corpus = badSpecCorpus();
  assert.ok(corpus.length >= 150, `${corpus.length} cases`);
  const dir = specDir(GOOD.map((name) => ({ name, script: { default: { mode: 'success' } } })));
  for (const c of corpus) writeFileSync(join(dir, c.file), c.text);

  const validate = await runCli(['validate', dir]);
  assert.equal(validate.code, 2);
  assert.doesNotMatch(validate.stderr, RAW_CONTROL);
  const lines = validate.stderr.split('\n');
  for (const line of lines) assert.ok(line.length <= 1200, `a line of ${line.length} characters`);
  const unnamed: string[] = [];
  for (const c of corpus) {
    const mine = lines.filter((l) => l.includes(join(dir, c.file)));
    if (mine.length === 0 || (c.field && !mine.some((l) => l.includes(c.field!))))
      unnamed.push(`${c.file} (${c.field ?? 'file'}): ${mine.join(' | ') || 'no line'}`);
  }
  assert.deepEqual(unnamed, [], 'files whose error does not name them (and their field)');

  const run = await runCli(['run', dir, '--max-concurrent', '3'], { timeoutMs: 120_000 });
  assert.equal(run.code, 1, 'bad files are not success');
  assert.doesNotMatch(run.stderr, /Unhandled|Maximum call stack|\n\s+at .+:\d+:\d+\)?\n/, run.stderr.slice(-3000));
  for (const name of GOOD) assert.equal(readStatus(dir, name)?.status.phase, 'Succeeded', name);
});
