// The bytes around one upstream attempt: a request body kept for a pool's failover (bounded by the gateway's
// request limit), and an answer whose error head is read (bounded) to classify it before the agent sees any
// of it, then streamed on as it arrives. A successful answer is never held: its bytes go straight through.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { MAX_ERROR_BODY_BYTES } from './upstream-signals.ts';

export interface Answer {
  status: number;
  upstream: Dispatcher.ResponseData;
  /** An error answer's first MAX_ERROR_BODY_BYTES as text; '' for a success. */
  errorText: string;
  /** The whole body: what was read already, then the rest as it arrives. */
  body(): Readable;
}

export async function readAnswer(upstream: Dispatcher.ResponseData): Promise<Answer> {
  const status = upstream.statusCode;
  if (status < 400) return { status, upstream, errorText: '', body: () => upstream.body };
  const it = upstream.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const head: Buffer[] = [];
  let size = 0;
  let done = false;
  while (size < MAX_ERROR_BODY_BYTES) {
    const r = await it.next();
    if (r.done) {
      done = true;
      break;
    }
    head.push(r.value);
    size += r.value.length;
  }
  const errorText = Buffer.concat(head).subarray(0, MAX_ERROR_BODY_BYTES).toString('utf8');
  async function* chunks(): AsyncIterable<Buffer> {
    yield* head;
    for (let r = done ? undefined : await it.next(); r && !r.done; r = await it.next()) yield r.value;
  }
  return { status, upstream, errorText, body: () => Readable.from(chunks()) };
}

/**
 * Streams `body` to `res`, each chunk shown to `onChunk` once it is written, and ends `res` with it.
 * Resolves when the body ended or the agent went away (the body is then destroyed); rejects on the body's
 * error (the caller cuts the stream). 'data' events, not an async iterator: the iterator's read() joins the
 * chunks buffered meanwhile into a new Buffer, a copy of most of a fast stream's bytes.
 */
export function relay(body: Readable, res: ServerResponse, onChunk: (chunk: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      // Written first, then read: the agent's side takes the bytes while this one meters them.
      if (!res.write(chunk)) body.pause();
      onChunk(chunk);
    };
    const onDrain = () => body.resume();
    const settle = (err?: Error) => {
      body.off('data', onData);
      body.off('end', onEnd);
      res.off('drain', onDrain);
      res.off('close', onClose);
      // The error listener stays: an abort after the end must not become an unhandled 'error'.
      if (err) reject(err);
      else resolve();
    };
    const onEnd = () => {
      res.end();
      settle();
    };
    const onClose = () => {
      body.destroy();
      settle();
    };
    if (res.destroyed) return onClose();
    body.on('error', settle);
    body.on('end', onEnd);
    res.on('drain', onDrain);
    res.on('close', onClose);
    body.on('data', onData);
  });
}

/** The request body, whole, or null once it is over `max` bytes (the stream stays open: the refusal drains it). */
export function readBounded(req: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void parts.push(chunk);
      stop();
      resolve(null);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(parts));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
