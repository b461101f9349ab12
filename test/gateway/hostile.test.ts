// Hostile requests at the gateway with its default limits (issue 29 §4): a 100 MiB body, header injection in
// the path, absolute URLs, tokens of other tasks and of finished episodes. Each is refused, nothing reaches
// the model server whole, and no answer holds the real key or a token.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { GATEWAY_REQUEST_BYTES_MAX } from '../../controller/api/bounds.ts';
import { startGateway } from '../../controller/gateway/gateway.ts';
import type { Gateway } from '../../controller/gateway/gateway.ts';
import { startModelServer } from '../model-server/server.ts';
import type { ModelServer } from '../model-server/server.ts';

const REAL_KEY = 'sk-ant-real-hostile-key-DO-NOT-LEAK-4b7d';
const MIB = 1024 * 1024;

/** One raw HTTP/1.1 exchange: exactly the bytes given (then `bodyBytes` of body), the answer as text. */
function raw(url: string, head: string, bodyBytes = 0): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    let text = '';
    let sent = 0;
    const chunk = Buffer.alloc(MIB, 'a');
    const pump = () => {
      while (sent < bodyBytes && !socket.destroyed) {
        sent += chunk.length;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
    };
    socket.on('connect', () => {
      socket.write(head);
      pump();
    });
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', (err) => (text ? undefined : reject(err)));
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text }));
    // Once an answer has come, the rest of the body is not sent.
    socket.once('data', () => setImmediate(() => socket.end()));
  });
}

describe('hostile requests at the gateway (default limits)', () => {
  let server: ModelServer;
  let gateway: Gateway;
  let token: string;
  let bigToken: string;
  let host: string;
  const answers: string[] = [];
  const prefix = '/t/default/victim';

  before(async () => {
    server = await startModelServer();
    gateway = await startGateway({ host: '127.0.0.1', log: pino({ level: 'silent' }) });
    host = new URL(gateway.url).host;
    const issue = (task: string, scenario: string) =>
      gateway.grants.issue({
        namespace: 'default',
        task,
        episode: 1,
        provider: 'anthropic',
        upstream: `${server.url}/s/${scenario}`,
        credentials: [{ name: 'main', value: REAL_KEY }],
        pricing: {},
        leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
      });
    token = issue('victim', 'ok.hostile');
    bigToken = issue('big', 'ok.hostile-big');
  });
  after(async () => {
    await gateway?.close();
    await server?.close();
  });

  const send = async (head: string, bodyBytes = 0) => {
    const a = await raw(gateway.url, head, bodyBytes);
    answers.push(a.text);
    return a;
  };
  const seen = () => server.requestsFor('ok.hostile').length;

  it('a 100 MiB body with its length declared: 413 before any of it is read, nothing forwarded', async () => {
    assert.ok(100 * MIB > GATEWAY_REQUEST_BYTES_MAX);
    const a = await send(
      `POST ${prefix}/v1/messages HTTP/1.1\r\nhost: ${host}\r\nx-api-key: ${token}\r\ncontent-type: application/json\r\ncontent-length: ${100 * MIB}\r\n\r\n`,
      100 * MIB,
    );
    assert.equal(a.status, 413, a.text.slice(0, 300));
    assert.equal(seen(), 0);
  });

  it('a 100 MiB body streamed without a length: 413, and no request reaches the server whole', async () => {
    const big = await chunked(gateway.url, '/t/default/big/v1/messages', bigToken, host, 100 * MIB);
    answers.push(big.text);
    // Under load the client's next write can meet the closed connection before it reads the 413: a reset is
    // the same refusal, seen from the client's side of TCP.
    const reset = big.status === 0 && /ECONNRESET|EPIPE/.test(big.error ?? '');
    assert.ok(big.status === 413 || reset, `${big.status} ${big.error ?? ''}: ${big.text.slice(0, 300)}`);
    // The gateway streams a body on as it arrives: what the server saw of it (under its own name) was cut short.
    assert.deepEqual(
      server.requestsFor('ok.hostile-big').filter((r) => r.complete),
      [],
    );
  });

  const injected: Array<[string, string]> = [
    ['an encoded CRLF and a header in the path', `${prefix}/v1/messages%0d%0aX-Injected:%20yes`],
    ['an encoded NUL in the path', `${prefix}/v1/messages%00`],
    ['an absolute URL to another host', 'http://evil.example/v1/messages'],
    ['an absolute URL to another host, with the task prefix', `http://evil.example${prefix}/v1/messages`],
    ['a scheme-relative path', `//evil.example${prefix}/v1/messages`],
    ['an encoded dot segment', `${prefix}/v1/%2e%2e/v1/messages`],
  ];
  for (const [name, target] of injected)
    it(`${name}: refused, nothing forwarded`, async () => {
      const a = await send(
        `POST ${target} HTTP/1.1\r\nhost: ${host}\r\nx-api-key: ${token}\r\ncontent-length: 2\r\n\r\n{}`,
      );
      assert.ok(a.status >= 400 && a.status < 500, `${a.status}: ${a.text.slice(0, 200)}`);
      assert.equal(seen(), 0);
    });

  it('a raw CR LF in the request line: the HTTP parser refuses it, nothing forwarded', async () => {
    const a = await send(
      `POST ${prefix}/v1/messages\rX-Injected: yes HTTP/1.1\r\nhost: ${host}\r\nx-api-key: ${token}\r\ncontent-length: 2\r\n\r\n{}`,
    );
    assert.equal(a.status, 400);
    assert.equal(seen(), 0);
  });

  it("another task's token, a finished episode's token: 401, nothing forwarded", async () => {
    const other = gateway.grants.issue({
      namespace: 'default',
      task: 'other',
      episode: 1,
      provider: 'anthropic',
      upstream: `${server.url}/s/ok.hostile`,
      credentials: [{ name: 'main', value: REAL_KEY }],
      pricing: {},
      leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
    });
    const theirs = await send(
      `POST ${prefix}/v1/messages HTTP/1.1\r\nhost: ${host}\r\nx-api-key: ${other}\r\ncontent-length: 2\r\n\r\n{}`,
    );
    gateway.grants.revoke(other);
    const finished = await send(
      `POST /t/default/other/v1/messages HTTP/1.1\r\nhost: ${host}\r\nx-api-key: ${other}\r\ncontent-length: 2\r\n\r\n{}`,
    );
    assert.deepEqual([theirs.status, finished.status], [401, 401]);
    assert.equal(seen(), 0);
  });

  it('no answer held the real key or a token', () => {
    assert.ok(answers.length >= 10);
    for (const text of answers) {
      assert.ok(!text.includes(REAL_KEY), text.slice(0, 200));
      assert.ok(!/episodic-gw-/.test(text), text.slice(0, 200));
    }
  });
});

/** A chunked POST of `bytes` bytes, 1 MiB a chunk, stopped as soon as an answer arrives. */
function chunked(
  url: string,
  path: string,
  token: string,
  host: string,
  bytes: number,
): Promise<{ status: number; text: string; error?: string }> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    let text = '';
    let sent = 0;
    const body = Buffer.alloc(MIB, 'a');
    const frame = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n')]);
    const pump = () => {
      while (sent < bytes && !socket.destroyed && text === '') {
        sent += body.length;
        if (!socket.write(frame)) return void socket.once('drain', pump);
      }
      if (sent >= bytes && !socket.destroyed) socket.write('0\r\n\r\n');
    };
    socket.on('connect', () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nhost: ${host}\r\nx-api-key: ${token}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`,
      );
      pump();
    });
    socket.on('data', (d) => {
      text += d.toString('latin1');
      setImmediate(() => socket.end());
    });
    let error: string | undefined;
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error = err.code ?? err.message;
    });
    socket.on('close', () =>
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text, ...(error ? { error } : {}) }),
    );
  });
}
