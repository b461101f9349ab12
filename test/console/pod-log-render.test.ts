// The cluster console's log text (console/pod-logs.ts renderedLog): agent stream-json rendered for reading
// as plain text, control characters escaped, a split multi-byte character kept whole, and cut at its bound.
import assert from 'node:assert/strict';
import { text } from 'node:stream/consumers';
import { test } from 'node:test';
import { renderedLog } from '../../controller/console/log-text.ts';

async function render(chunks: Buffer[], maxBytes = 1024 * 1024): Promise<string> {
  const out = renderedLog(maxBytes);
  const done = text(out);
  for (const c of chunks) out.write(c);
  out.end();
  return done;
}

test('renders stream-json for reading; terminal escapes arrive as visible text; a split character stays whole', async () => {
  const said = JSON.stringify({
    type: 'assistant',
    message: { content: [{ type: 'text', text: 'héllo \u001b[2J<b>' }] },
  });
  const bytes = Buffer.from(`${said}\nplain line\n`);
  const cut = bytes.indexOf(Buffer.from('é')) + 1; // in the middle of é's two bytes
  const out = await render([bytes.subarray(0, cut), bytes.subarray(cut)]);
  assert.equal(out, 'héllo \\x1b[2J<b>\nplain line\n');
});

test('cuts the text at its byte bound, with a note, and ignores what comes after', async () => {
  const line = `${'x'.repeat(99)}\n`;
  const out = await render(
    Array.from({ length: 50 }, () => Buffer.from(line)),
    1000,
  );
  const lines = out.split('\n').filter(Boolean);
  assert.equal(lines.length, 11);
  assert.match(lines.at(-1) ?? '', /^--- cut at 1000 bytes: kubectl logs has the rest ---$/);
});

test('a 100 MB line without a newline until its end: cut, with its size, and the lines after it rendered', async () => {
  const mib = Buffer.alloc(1024 * 1024, 'z');
  const out = await render([
    Buffer.from('first\n'),
    ...Array.from({ length: 100 }, () => mib),
    Buffer.from('\nlast\n'),
  ]);
  const lines = out.split('\n');
  assert.equal(lines[0], 'first');
  assert.match(lines[1] ?? '', /^z+… 104,857,600 bytes, cut$/);
  assert.deepEqual(lines.slice(2), ['last', '']);
});
