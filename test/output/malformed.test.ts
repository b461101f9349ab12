// Broken, truncated and odd output: never throws, degrades to text, completion only from the final output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createOutputAnalyzer, type AnalyzerLimits } from '../../controller/executors/output/index.ts';
import type { OutputAnalysis, OutputSetting, ProcessExit } from '../../controller/executors/output/types.ts';

const FIXTURES = new URL('../fixtures/agent-outputs/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8');

function run(
  stdout: string | Buffer,
  exit: ProcessExit = { exitCode: 0 },
  format: OutputSetting = 'auto',
  limits?: AnalyzerLimits,
): OutputAnalysis {
  const analyzer = createOutputAnalyzer({ format, promise: 'COMPLETE' }, limits);
  analyzer.write(stdout, 'stdout');
  return analyzer.finish(exit);
}

const line = (value: unknown): string => `${JSON.stringify(value)}\n`;

test('claude stream cut before its result: last assistant text and per-message usage', () => {
  const full = fixture('claude-stream-success.jsonl');
  const cut = full.slice(0, full.indexOf('{"type":"result"') + 40);
  const a = run(cut, { exitCode: null, signal: 'SIGKILL' });
  assert.equal(a.format, 'claude');
  assert.equal(a.agentError, false);
  assert.equal(a.completion, 'promise');
  // msg_01 + msg_02, each counted once
  assert.deepEqual(a.tokens, { input: 5050, output: 95, cacheRead: 23600, cacheWrite: 0 });
  assert.equal(a.costUSD, 0);
  assert.equal(a.errorClass, 'none');
  assert.equal(a.message, 'Every item is done and the tests pass. <promise>COMPLETE</promise>');
});

test('claude usage repeated per content block of one message is counted once', () => {
  const usage = { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 1000 };
  const block = (text: string) =>
    line({ type: 'assistant', session_id: 's', message: { id: 'm1', content: [{ type: 'text', text }], usage } });
  const a = run(block('part one, ') + block('<promise>COMPLETE</promise>'), { exitCode: 0 });
  assert.deepEqual(a.tokens, { input: 100, output: 10, cacheRead: 1000, cacheWrite: 0 });
  assert.equal(a.completion, 'promise');
  assert.equal(a.message, 'part one, <promise>COMPLETE</promise>');
});

test('garbage, truncated JSON and wrong types never throw and end as text', () => {
  const junk = Buffer.concat([
    Buffer.from('{"type":"result", "is_error": tr\n[1,2,\nnull\n"string"\n{}\n'),
    Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x0a, 0xc3]),
    Buffer.from(`${'['.repeat(100000)}\n`),
  ]);
  const a = run(junk, { exitCode: 1 });
  assert.equal(a.format, 'text');
  assert.equal(a.errorClass, 'none');
  assert.equal(a.agentError, false);
});

test('a result object with wrong field types yields zeros, not NaN', () => {
  const a = run(
    line({ type: 'result', session_id: 's', is_error: 'yes', usage: 'lots', total_cost_usd: '1.0', result: 42 }) +
      line({ type: 'assistant', session_id: 's', message: null }),
    { exitCode: 0 },
    'auto',
  );
  assert.equal(a.format, 'claude');
  assert.equal(a.agentError, false);
  assert.deepEqual(a.tokens, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
  assert.equal(a.costUSD, 0);
});

test('a truncated pretty-printed document degrades to text', () => {
  const pretty = JSON.stringify(JSON.parse(fixture('gemini-json.json')), null, 2);
  const a = run(pretty.slice(0, pretty.length / 2), { exitCode: 1 });
  assert.equal(a.format, 'text');
});

test('claude --output-format json --verbose prints one array of messages', () => {
  const events = fixture('claude-stream-success.jsonl')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const a = run(JSON.stringify(events));
  assert.equal(a.format, 'claude');
  assert.equal(a.costUSD, 0.0734);
  assert.equal(a.completion, 'promise');
});

test('a banner line before the JSON does not stop detection', () => {
  const a = run(`Loaded cached credentials.\n${fixture('gemini-json.json')}`);
  assert.equal(a.format, 'gemini');
  assert.equal(a.completion, 'promise');
});

test('JSON-looking lines deep into a text agent do not switch the format', () => {
  const prose = Array.from({ length: 60 }, (_, i) => `step ${i}: working`).join('\n');
  const a = run(`${prose}\n${fixture('codex-exec-success.jsonl')}`);
  assert.equal(a.format, 'text');
});

test('lines over the cap are dropped and counted; the rest still parses', () => {
  const lines = fixture('claude-stream-success.jsonl').split('\n');
  const huge = line({ type: 'user', session_id: 's', message: { content: 'x'.repeat(5000) } });
  const input = [lines[0], huge.trimEnd(), ...lines.slice(1)].join('\n');
  const analyzer = createOutputAnalyzer({ format: 'auto', promise: 'COMPLETE' }, { maxLineBytes: 2048 });
  for (let i = 0; i < input.length; i += 300) analyzer.write(input.slice(i, i + 300), 'stdout');
  const a = analyzer.finish({ exitCode: 0 });
  assert.equal(analyzer.stats().droppedLines, 1);
  assert.equal(a.costUSD, 0.0734);
  assert.equal(a.completion, 'promise');
});

test('finish is idempotent and writes after it are ignored', () => {
  const analyzer = createOutputAnalyzer({ format: 'text', promise: 'COMPLETE' });
  analyzer.write('working\n', 'stdout');
  const first = analyzer.finish({ exitCode: 0 });
  analyzer.write('<promise>COMPLETE</promise>\n', 'stdout');
  assert.equal(analyzer.finish({ exitCode: 1 }), first);
  assert.equal(first.completion, undefined);
});

test('promise only in an earlier claude message, not the result, is no completion', () => {
  const a = run(
    line({
      type: 'assistant',
      session_id: 's',
      message: { id: 'm1', content: [{ type: 'text', text: 'I will print <promise>COMPLETE</promise> at the end' }] },
    }) +
      line({ type: 'result', session_id: 's', is_error: false, result: 'Still one item to go.', total_cost_usd: 0.01 }),
  );
  assert.equal(a.completion, undefined);
  assert.equal(a.message, 'Still one item to go.');
});

test('codex: only the last agent message counts', () => {
  const msg = (text: string) => line({ type: 'item.completed', item: { id: 'i', type: 'agent_message', text } });
  const early =
    line({ type: 'thread.started', thread_id: 't' }) + msg('Plan: finish, then print <promise>COMPLETE</promise>');
  assert.equal(run(early + msg('Tests still failing.')).completion, undefined);
  assert.equal(run(early + msg('All done. <promise>COMPLETE</promise>')).completion, 'promise');
});

test('gemini stream: deltas join; text before the last tool call is not final', () => {
  const ev = (v: object) => line({ timestamp: '2026-01-01T00:00:00Z', ...v });
  const init = ev({ type: 'init', session_id: 's' });
  const say = (content: string) => ev({ type: 'message', role: 'assistant', content, delta: true });
  const result = ev({ type: 'result', status: 'success', stats: { input_tokens: 10, output_tokens: 2, cached: 0 } });
  assert.equal(run(init + say('Done. <promise>COM') + say('PLETE</promise>') + result).completion, 'promise');
  const tool = ev({ type: 'tool_use', tool_name: 'x', tool_id: '1', parameters: {} });
  assert.equal(
    run(init + say('<promise>COMPLETE</promise>') + tool + say('One more thing left.') + result).completion,
    undefined,
  );
});

test('RALPH_STATUS: the last block decides, EXIT_SIGNAL false is no completion', () => {
  const block = (signal: string) => `---RALPH_STATUS---\nSTATUS: X\nEXIT_SIGNAL: ${signal}\n---END_RALPH_STATUS---\n`;
  assert.equal(run(block('false')).completion, undefined);
  assert.equal(run(`${block('true')}more work\n${block('false')}`).completion, undefined);
  assert.equal(run(block('false') + block('TRUE')).completion, 'exitSignal');
  // In a JSON format's final text too.
  const result = line({ type: 'result', session_id: 's', is_error: false, result: block('true') });
  assert.equal(run(result).completion, 'exitSignal');
});

test('text tail is bounded: a sentinel early in a long output is gone, at the end it is found', () => {
  const filler = 'lorem ipsum dolor sit amet\n'.repeat(10_000); // ~270 KB
  assert.equal(run(`<promise>COMPLETE</promise>\n${filler}`, { exitCode: 0 }, 'text').completion, undefined);
  assert.equal(run(`${filler}<promise>COMPLETE</promise>\n`, { exitCode: 0 }, 'text').completion, 'promise');
});

test('message is one line of at most 300 characters', () => {
  const a = run(`${'word '.repeat(500)}\nlast words here`, { exitCode: 0 }, 'text');
  assert.ok(a.message !== undefined && a.message.length <= 300);
  assert.ok(!a.message.includes('\n'));
  assert.ok(a.message.endsWith('last words here'));
});
