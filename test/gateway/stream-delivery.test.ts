// How the gateway hands an answer on (gateway.ts forward): its headers reach the agent while the upstream has
// sent no body yet (they go with the first chunk only when that chunk is already there), and an agent that
// reads slowly gets the whole stream through many waits for drain without listeners piling up on the response;
// the bytes arrive as sent, however they fall into chunks, and an agent that leaves mid-stream ends the upstream's.
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startGateway } from '../../controller/gateway/gateway.ts';
import { waitFor } from '../support/wait.ts';
import type { Gateway } from '../../controller/gateway/gateway.ts';

const CHUNK = Buffer.from(`data: {"type":"ping","pad":"${'x'.repeat(64 * 1024)}"}\n\n`);
const CHUNKS = 256; // 16 MiB: far more than the loopback socket buffers hold

/** Usage, multi-byte text and CRLF blank lines, in writes of odd sizes that cut characters and lines apart. */
const ODD = Buffer.from(
  `event: message_start\r\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":7}}}\r\n\r\n${Array.from(
    { length: 400 },
    (_, i) => `data: {"type":"content_block_delta","delta":{"text":"é€😀 ${i}"}}\n\n`,
  ).join('')}data: {"type":"message_delta","usage":{"output_tokens":9}}\n\n`,
);
const ODD_CUTS = [1, 7, 333, 4096, 13, 65537];

/**
 * `held` sends its headers and then waits for `release`; `odd` sends ODD in writes of ODD_CUTS sizes; any other
 * case sends CHUNKS chunks, minding backpressure (the upstream's response emits `closed` with whether it finished).
 */
async function upstream() {
  const events = new EventEmitter();
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res: ServerResponse) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.on('close', () => events.emit('closed', res.writableFinished));
    if (req.headers['x-case'] === 'odd') {
      for (let at = 0, i = 0; at < ODD.length; i++) {
        const size = ODD_CUTS[i % ODD_CUTS.length] as number;
        res.write(ODD.subarray(at, at + size));
        at += size;
      }
      res.end();
      return;
    }
    if (req.url === '/v1/messages' && req.headers['x-case'] === 'held') {
      res.flushHeaders();
      events.once('release', () => res.end('data: {"type":"message_stop"}\n\n'));
      return;
    }
    let i = 0;
    const write = () => {
      while (i < CHUNKS) {
        i++;
        if (!res.write(CHUNK)) return void res.once('drain', write);
      }
      res.end(() => events.emit('sent'));
    };
    write();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    events,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('the gateway hands an answer on as it comes', { timeout: 30_000 }, () => {
  let up: Awaited<ReturnType<typeof upstream>>;
  let gateway: Gateway;
  let n = 0;
  const open = (kase: string) => {
    const task = `delivery-${++n}`;
    const token = gateway.grants.issue({
      namespace: 'default',
      task,
      episode: 1,
      provider: 'anthropic',
      upstream: up.url,
      credentials: [{ name: 'main', value: 'sk-delivery' }],
      pricing: {},
      leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
    });
    const req = httpRequest(`${gateway.baseUrl('default', task)}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': token, 'x-case': kase, 'content-type': 'application/json' },
    });
    req.end('{}');
    return (once(req, 'response') as Promise<[IncomingMessage]>).then(([res]) => [res, token] as const);
  };

  before(async () => {
    up = await upstream();
    gateway = await startGateway({ host: '127.0.0.1', log: pino({ level: 'silent' }) });
  });
  after(async () => {
    await gateway?.close();
    await up?.close();
  });

  it('the headers reach the agent before any of the body exists', async () => {
    const [res] = await open('held');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    let body = '';
    res.on('data', (c: Buffer) => (body += c.toString('utf8')));
    const ended = once(res, 'end');
    up.events.emit('release');
    await ended;
    assert.equal(body, 'data: {"type":"message_stop"}\n\n');
  });

  it('the bytes reach the agent as the upstream sent them, however they were cut; the usage in them is metered', async () => {
    const [res, token] = await open('odd');
    const parts: Buffer[] = [];
    res.on('data', (c: Buffer) => parts.push(c));
    await once(res, 'end');
    assert.ok(Buffer.concat(parts).equals(ODD), 'the bytes changed on the way');
    const metered = gateway.grants.get(token)?.metered;
    assert.deepEqual([metered?.tokens.input, metered?.tokens.output], [7, 9]);
  });

  it('an agent that leaves mid-stream: the upstream answer is cut too, nothing stays in flight', async () => {
    const closed = once(up.events, 'closed');
    const [res, token] = await open('big');
    await once(res, 'data');
    res.destroy();
    const [finished] = (await closed) as [boolean];
    assert.equal(finished, false, 'the upstream kept sending to an agent that left');
    const metered = gateway.grants.get(token)?.metered;
    await waitFor('the cut request to be charged', () => metered?.requests === 1);
    assert.equal(metered?.inFlight, 0);
  });

  it('a slow reader gets all of a 16 MiB stream; no listeners pile up while it waits', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const sent = once(up.events, 'sent');
      const [res] = await open('big');
      res.pause();
      // The agent reads only in small sips: the gateway's writes back up again and again.
      let bytes = 0;
      const ended = once(res, 'end');
      const sip = () => {
        const c = res.read(16 * 1024) as Buffer | null;
        if (c) bytes += c.length;
        if (!res.readableEnded) setImmediate(sip);
      };
      res.on('readable', () => {});
      sip();
      await Promise.all([ended, sent]);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(bytes, CHUNK.length * CHUNKS);
      assert.deepEqual(
        warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')),
        [],
      );
    } finally {
      process.off('warning', onWarning);
    }
  });
});
