// Pipes deliver arbitrary chunks: the analysis must not depend on where they are cut.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';
import type { OutputAnalysis } from '../../controller/executors/output/types.ts';

const FIXTURES = new URL('../fixtures/agent-outputs/', import.meta.url);
const NOW = new Date('2026-03-10T10:00:00Z');

function run(chunks: Array<Buffer | string>, exitCode = 0): OutputAnalysis {
  const analyzer = createOutputAnalyzer({ format: 'auto', promise: 'COMPLETE', now: () => NOW });
  for (const c of chunks) analyzer.write(c, 'stdout');
  return analyzer.finish({ exitCode });
}

function fixture(name: string): Buffer {
  return readFileSync(new URL(name, FIXTURES));
}

function everySplit(name: string, bytes: Buffer, exitCode: number): void {
  const whole = run([bytes], exitCode);
  for (let i = 0; i <= bytes.length; i++) {
    const split = run([bytes.subarray(0, i), bytes.subarray(i)], exitCode);
    assert.deepEqual(split, whole, `${name} split at byte ${i}`);
  }
}

test('claude stream: same analysis for a cut at every byte offset', () => {
  const bytes = fixture('claude-stream-success.jsonl');
  const whole = run([bytes]);
  assert.equal(whole.completion, 'promise');
  assert.equal(whole.tokens.input, 5050);
  everySplit('claude-stream-success', bytes, 0);
});

test('codex stream: same analysis for a cut at every byte offset', () => {
  everySplit('codex-exec-success', fixture('codex-exec-success.jsonl'), 0);
});

test('multi-byte characters cut in half still decode (usage-limit text has "·")', () => {
  const bytes = fixture('claude-text-usage-limit.txt');
  assert.ok(bytes.includes(Buffer.from('·')), 'fixture holds a 2-byte character');
  const whole = run([bytes], 1);
  assert.equal(whole.message, "You've hit your limit · resets 3pm (Europe/Berlin)");
  everySplit('claude-text-usage-limit', bytes, 1);
});

test('pretty-printed gemini json: same analysis for a cut at every byte offset', () => {
  const pretty = Buffer.from(`${JSON.stringify(JSON.parse(fixture('gemini-json.json').toString()), null, 2)}\n`);
  const whole = run([pretty]);
  assert.equal(whole.format, 'gemini');
  assert.equal(whole.completion, 'promise');
  assert.deepEqual(whole.tokens, { input: 12230, output: 780, cacheRead: 6000, cacheWrite: 0 });
  everySplit('gemini-json pretty', pretty, 0);
});

test('every fixture gives the same analysis fed byte by byte, in odd chunks and as strings', () => {
  const files = readdirSync(FIXTURES, { withFileTypes: true }).filter((f) => f.isFile() && f.name !== 'README.md');
  for (const name of files.map((f) => f.name)) {
    const bytes = fixture(name);
    const whole = run([bytes], 1);
    const single = [...bytes].map((b) => Buffer.from([b]));
    assert.deepEqual(run(single, 1), whole, `${name} byte by byte`);
    const odd: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 7) odd.push(bytes.subarray(i, i + 7));
    assert.deepEqual(run(odd, 1), whole, `${name} in 7-byte chunks`);
    const lines = bytes.toString('utf8').split(/(?<=\n)/);
    assert.deepEqual(run(lines, 1), whole, `${name} as string lines`);
  }
});

test('CRLF line endings parse like LF', () => {
  const lf = fixture('codex-exec-success.jsonl');
  const crlf = Buffer.from(lf.toString('utf8').replace(/\n/g, '\r\n'));
  assert.deepEqual(run([crlf]), run([lf]));
});
