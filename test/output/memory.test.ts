// A chatty agent must not blow up controller memory: ~200 MB through the analyzer, memory stays flat.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';

const MB = 1024 * 1024;
const ALLOWED_GROWTH = 100 * MB;

interface Peak {
  heap: number;
  rss: number;
}

function measure(feed: (sample: () => void) => void): Peak {
  const base = process.memoryUsage();
  const peak: Peak = { heap: 0, rss: 0 };
  const sample = (): void => {
    const m = process.memoryUsage();
    peak.heap = Math.max(peak.heap, m.heapUsed - base.heapUsed);
    peak.rss = Math.max(peak.rss, m.rss - base.rss);
  };
  feed(sample);
  sample();
  return peak;
}

test('200 MB of claude stream-json: bounded memory, every event still counted', () => {
  // One ~1 MiB chunk of assistant/tool events, reused so the test itself allocates nothing per round.
  const events: string[] = [];
  let size = 0;
  for (let i = 0; size < MB; i++) {
    const l =
      i % 2 === 0
        ? JSON.stringify({
            type: 'assistant',
            session_id: 's',
            message: {
              id: `m${i}`,
              content: [{ type: 'text', text: 'x'.repeat(900) }],
              usage: { input_tokens: 1, output_tokens: 2 },
            },
          })
        : JSON.stringify({
            type: 'user',
            session_id: 's',
            message: { content: [{ type: 'tool_result', content: 'y'.repeat(3000) }] },
          });
    events.push(l);
    size += l.length + 1;
  }
  const chunk = Buffer.from(`${events.join('\n')}\n`);
  const rounds = Math.ceil((200 * MB) / chunk.length);
  const analyzer = createOutputAnalyzer({ format: 'auto', promise: 'COMPLETE' });
  const started = Date.now();
  const peak = measure((sample) => {
    for (let r = 0; r < rounds; r++) {
      // Cut each round unevenly so lines straddle writes.
      analyzer.write(chunk.subarray(0, 12_345), 'stdout');
      analyzer.write(chunk.subarray(12_345), 'stdout');
      analyzer.write('progress line on stderr\n', 'stderr');
      if (r % 10 === 0) sample();
    }
  });
  analyzer.write(
    `${JSON.stringify({ type: 'result', session_id: 's', is_error: false, result: 'done <promise>COMPLETE</promise>', total_cost_usd: 12.5, usage: { input_tokens: 7, output_tokens: 8 } })}\n`,
    'stdout',
  );
  const a = analyzer.finish({ exitCode: 0 });
  const stats = analyzer.stats();
  assert.ok(stats.stdoutBytes >= 200 * MB, `pushed ${stats.stdoutBytes} bytes`);
  assert.equal(stats.events, rounds * events.length + 1);
  assert.equal(stats.droppedLines, 0);
  assert.equal(a.format, 'claude');
  assert.equal(a.completion, 'promise');
  assert.equal(a.costUSD, 12.5);
  assert.ok(peak.heap < ALLOWED_GROWTH, `heap grew ${(peak.heap / MB).toFixed(1)} MB`);
  assert.ok(peak.rss < ALLOWED_GROWTH, `rss grew ${(peak.rss / MB).toFixed(1)} MB`);
  assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
});

test('200 MB of text without a single newline: the runaway line is dropped, memory flat', () => {
  const chunk = Buffer.alloc(4 * MB, 'z');
  const analyzer = createOutputAnalyzer({ format: 'auto', promise: 'COMPLETE' });
  const peak = measure((sample) => {
    for (let r = 0; r < 50; r++) {
      analyzer.write(chunk, 'stdout');
      sample();
    }
  });
  analyzer.write('\n<promise>COMPLETE</promise>\n', 'stdout');
  const a = analyzer.finish({ exitCode: 0 });
  assert.equal(analyzer.stats().droppedLines, 1);
  assert.equal(a.format, 'text');
  assert.equal(a.completion, 'promise');
  assert.ok(peak.heap < ALLOWED_GROWTH, `heap grew ${(peak.heap / MB).toFixed(1)} MB`);
  assert.ok(peak.rss < ALLOWED_GROWTH, `rss grew ${(peak.rss / MB).toFixed(1)} MB`);
});

test('many tiny streamed deltas stay linear and keep the end of the final text', () => {
  const delta = Buffer.from(
    `${JSON.stringify({ type: 'message', timestamp: 't', role: 'assistant', content: 'word ', delta: true })}\n`,
  );
  const deltas = Buffer.concat(Array.from({ length: 1000 }, () => delta));
  const analyzer = createOutputAnalyzer({ format: 'auto', promise: 'COMPLETE' });
  const started = Date.now();
  analyzer.write(`${JSON.stringify({ type: 'init', timestamp: 't', session_id: 's' })}\n`, 'stdout');
  for (let r = 0; r < 300; r++) analyzer.write(deltas, 'stdout'); // 300k deltas, 1.5M characters of text
  analyzer.write(
    `${JSON.stringify({ type: 'message', timestamp: 't', role: 'assistant', content: '<promise>COMPLETE</promise>', delta: true })}\n`,
    'stdout',
  );
  analyzer.write(`${JSON.stringify({ type: 'result', timestamp: 't', status: 'success', stats: {} })}\n`, 'stdout');
  const a = analyzer.finish({ exitCode: 0 });
  assert.equal(a.format, 'gemini');
  assert.equal(a.completion, 'promise');
  assert.ok(a.message?.endsWith('word word <promise>COMPLETE</promise>'));
  assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
});
