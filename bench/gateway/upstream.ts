// bench/gateway's model server: an Anthropic Messages SSE stream, short (~1 KB) under /short, 1 MiB under
// /big, usage in message_start and message_delta as a real one sends it. Runs in a process of its own, so
// neither the gateway nor the client shares its event loop. Prints its URL on IPC.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const MIB = 1024 * 1024;
const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const start = event('message_start', {
  message: {
    id: 'msg_bench',
    type: 'message',
    role: 'assistant',
    model: 'claude-bench',
    content: [],
    usage: { input_tokens: 1000, output_tokens: 1 },
  },
});
const end = `${event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 500 } })}${event('message_stop', {})}`;
const delta = (text: string) => event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });

/** The body's chunks as written: the short answer in one write, the long one in 64 KiB events. */
const BODIES: Record<string, Buffer[]> = {
  short: [Buffer.from(`${start}${delta('x'.repeat(600))}${end}`)],
  big: [
    Buffer.from(start),
    ...Array.from({ length: MIB / (64 * 1024) }, () => Buffer.from(delta('x'.repeat(64 * 1024 - 90)))),
    Buffer.from(end),
  ],
};

const server = createServer((req, res) => {
  const size = /^\/(short|big)\/v1\/messages$/.exec(req.url ?? '')?.[1];
  req.resume();
  req.on('end', () => {
    const chunks = size ? BODIES[size] : undefined;
    if (!chunks) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let i = 0;
    const write = () => {
      while (i < chunks.length) if (!res.write(chunks[i++] as Buffer)) return void res.once('drain', write);
      res.end();
    };
    write();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
});
process.on('disconnect', () => process.exit(0));
