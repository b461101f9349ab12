// The bytes around one upstream attempt: a request body kept for a pool's failover (bounded by the gateway's
// request limit), and an answer whose error head is read (bounded) to classify it before the agent sees any
// of it, then streamed on as it arrives. A successful answer is never held: its bytes go straight through.
import type { IncomingMessage } from 'node:http';
import type { Dispatcher } from 'undici';
import { MAX_ERROR_BODY_BYTES } from './upstream-signals.ts';

export interface Answer {
  status: number;
  upstream: Dispatcher.ResponseData;
  /** An error answer's first MAX_ERROR_BODY_BYTES as text; '' for a success. */
  errorText: string;
  /** The whole body: what was read already, then the rest as it arrives. */
  chunks(): AsyncIterable<Buffer>;
}

export async function readAnswer(upstream: Dispatcher.ResponseData): Promise<Answer> {
  const status = upstream.statusCode;
  if (status < 400) return { status, upstream, errorText: '', chunks: () => upstream.body };
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
  return { status, upstream, errorText, chunks };
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
