// The bounded building blocks: line splitting with a cap, and the fixed-size byte tail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createByteTail } from '../../controller/executors/output/byte-tail.ts';
import { createLineSplitter } from '../../controller/executors/output/line-splitter.ts';

function split(chunks: string[], max = 1024): { lines: string[]; dropped: number } {
  const lines: string[] = [];
  const splitter = createLineSplitter((l) => lines.push(l.toString('utf8')), max);
  for (const c of chunks) splitter.push(Buffer.from(c));
  splitter.end();
  return { lines, dropped: splitter.droppedLines };
}

test('splits across chunks, strips CR, keeps empty lines and the unterminated tail', () => {
  assert.deepEqual(split(['a', 'b\r\nc\n', '\nd']), { lines: ['ab', 'c', '', 'd'], dropped: 0 });
  assert.deepEqual(split(['x\n']), { lines: ['x'], dropped: 0 });
  assert.deepEqual(split([]), { lines: [], dropped: 0 });
});

test('a line over the cap is dropped whole, whether it arrives in one chunk or many', () => {
  const long = 'L'.repeat(20);
  assert.deepEqual(split([`ok\n${long}\nnext\n`], 10), { lines: ['ok', 'next'], dropped: 1 });
  assert.deepEqual(split(['ok\nLLLLLL', 'LLLLLL', 'LLLL\nnext'], 10), { lines: ['ok', 'next'], dropped: 1 });
  // Exactly at the cap is kept.
  assert.deepEqual(split(['0123456789\n'], 10), { lines: ['0123456789'], dropped: 0 });
  // An over-long unterminated tail is dropped too.
  assert.deepEqual(split(['ok\n', long], 10), { lines: ['ok'], dropped: 1 });
});

test('a UTF-8 character split between chunks is reassembled', () => {
  const bytes = Buffer.from('grüße ∙ done\n');
  for (let i = 0; i <= bytes.length; i++) {
    const lines: string[] = [];
    const splitter = createLineSplitter((l) => lines.push(l.toString('utf8')));
    splitter.push(bytes.subarray(0, i));
    splitter.push(bytes.subarray(i));
    splitter.end();
    assert.deepEqual(lines, ['grüße ∙ done'], `cut at ${i}`);
  }
});

test('byte tail keeps exactly the last N bytes over any chunking', () => {
  const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(''));
  for (const chunkSize of [1, 3, 16, 17, 999, 1000, 5000]) {
    const tail = createByteTail(16);
    for (let i = 0; i < data.length; i += chunkSize) tail.push(data.subarray(i, i + chunkSize));
    assert.equal(tail.text(), data.subarray(data.length - 16).toString(), `chunks of ${chunkSize}`);
    assert.equal(tail.totalBytes, 1000);
  }
  const short = createByteTail(16);
  short.push(Buffer.from('hello'));
  assert.equal(short.text(), 'hello');
});

test('byte tail grows to its capacity as output arrives, keeping the same bytes as a full ring would', () => {
  let seed = 7;
  const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  for (const total of [0, 1, 255, 256, 257, 999, 1000, 1001, 4321]) {
    const data = Buffer.from(
      Array.from({ length: total }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join(''),
    );
    const tail = createByteTail(1000);
    for (let i = 0; i < data.length; ) {
      const n = 1 + random(300);
      tail.push(data.subarray(i, i + n));
      i += n;
    }
    assert.equal(tail.text(), data.subarray(Math.max(0, total - 1000)).toString(), `${total} bytes`);
  }
});

test('byte tail drops a multi-byte character cut at its start', () => {
  const tail = createByteTail(4);
  tail.push(Buffer.from('x∙ab')); // ∙ is 3 bytes: e2 88 99; the tail keeps 88 99 'a' 'b'
  assert.equal(tail.text(), 'ab');
});
