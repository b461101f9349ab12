// The generated corpus of bad spec files (test/support/bad-specs.ts) in one spec directory beside good tasks:
// validate names every bad file (and its field) in one escaped, bounded line each, and run — no crash, no
// stack trace — still runs the good tasks to Succeeded (issue 12). validate and run agree on every case
// (issue 18.7): what validate refuses, run refuses before any episode, naming the same file; what validate
// only warns about, run warns about too, naming file and field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { badSpecCorpus } from '../support/bad-specs.ts';
import type { BadSpecCase } from '../support/bad-specs.ts';
import { readStatus, runCli, specDir, tempDir } from '../support/local.ts';

const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const GOOD = ['good-1', 'good-2', 'good-3'];

function writeCorpus(dir: string, corpus: BadSpecCase[]): void {
  const outside = tempDir();
  for (const c of corpus) {
    if (c.linkedFromOutside) {
      writeFileSync(join(outside, c.file), c.text);
      symlinkSync(join(outside, c.file), join(dir, c.file));
    } else writeFileSync(join(dir, c.file), c.text);
    c.setup?.(dir, outside);
  }
}

const LEVELS: Record<string, number> = { warn: 40, error: 50, fatal: 60 };

/** run's JSON log lines at warn (40) and above, and the final status of each task (level 30). */
function runLines(stderr: string): { level: number; msg: string }[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; msg: string; message?: string })
    .map((l) => ({
      level: LEVELS[l.level] ?? 30,
      msg: l.msg === 'final status' ? (l.message ?? '') : l.msg,
      final: l.msg === 'final status',
    }))
    .filter((l) => l.level >= 40 || l.final)
    .map(({ level, msg }) => ({ level, msg }));
}

test('bad-spec corpus: every bad file named with its field; the good tasks beside them still run; validate and run agree', async () => {
  const corpus = badSpecCorpus();
  assert.ok(corpus.length >= 150, `${corpus.length} cases`);
  const dir = specDir(GOOD.map((name) => ({ name, script: { default: { mode: 'success' } } })));
  writeCorpus(dir, corpus);

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
  const erring = (out: string[]) =>
    new Set(corpus.filter((c) => out.some((l) => !l.startsWith('warning: ') && l.includes(join(dir, c.file)))));
  const refused = erring(lines);
  const warned = corpus.filter((c) => c.warning);
  assert.ok(warned.length > 0);
  for (const c of warned) {
    assert.ok(!refused.has(c), `${c.file}: a warning case refused`);
    assert.ok(
      lines.some((l) => l.startsWith('warning: ') && l.includes(join(dir, c.file)) && l.includes(c.field ?? '')),
      `${c.file}: no warning naming ${c.field}`,
    );
  }
  // The same files given one by one: the same verdicts.
  const files = [...GOOD.map((n) => `${n}.yaml`), ...corpus.map((c) => c.file)].sort().map((f) => join(dir, f));
  const byFile = await runCli(['validate', ...files]);
  const fileRefused = erring(byFile.stderr.split('\n'));
  assert.deepEqual(
    corpus.filter((c) => refused.has(c) !== fileRefused.has(c)).map((c) => c.file),
    [],
    'validate DIR and validate FILE... disagree',
  );

  const run = await runCli(['run', dir, '--max-concurrent', '3'], { timeoutMs: 120_000 });
  assert.equal(run.code, 1, 'bad files are not success');
  assert.doesNotMatch(run.stderr, /Unhandled|Maximum call stack|\n\s+at .+:\d+:\d+\)?\n/, run.stderr.slice(-3000));
  for (const name of GOOD) assert.equal(readStatus(dir, name)?.status.phase, 'Succeeded', name);

  const logged = runLines(run.stderr);
  const disagree: string[] = [];
  for (const c of corpus) {
    const path = join(dir, c.file);
    const said = logged.filter((l) => l.msg.includes(path));
    if (said.length === 0) disagree.push(`${c.file}: run never names it`);
    if (c.warning && !said.some((l) => l.level === 40 && l.msg.includes(c.field ?? '')))
      disagree.push(`${c.file}: run does not warn about ${c.field}`);
    const name = (c.object?.metadata as { name?: unknown } | undefined)?.name;
    if (c.warning || typeof name !== 'string' || GOOD.includes(name) || !/^[a-z0-9-]+$/.test(name)) continue;
    const episodes = readStatus(dir, name)?.status.episodes ?? 0;
    if (episodes > 0) disagree.push(`${c.file}: validate refused it, run spent ${episodes} episode(s) on it`);
  }
  assert.deepEqual(disagree, [], 'validate and run disagree');
  // Every problem run logs names the file it is about (a YAML error too).
  const good = GOOD.map((n) => join(dir, `${n}.yaml`));
  const anonymous = logged.filter(
    (l) =>
      l.level >= 50 && !corpus.some((c) => l.msg.includes(join(dir, c.file))) && !good.some((g) => l.msg.includes(g)),
  );
  assert.deepEqual(anonymous, [], 'error lines that name no file');
});
