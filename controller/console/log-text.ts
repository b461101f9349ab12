// An episode's log as the console serves it, locally and on a cluster: one rendering path
// (executors/output/log-render.ts, the same as `episodic logs`), plain text, bounded; or the bytes as they are
// when a person asks for them raw.
import { PassThrough, Transform } from 'node:stream';
import { LogRenderer } from '../executors/output/log-render.ts';

const RENDER_WIDTH = 240;

/** An episode's log as the console serves it: rendered text, or why there is none. */
export type EpisodeLog =
  | { ok: true; follow: boolean; text: NodeJS.ReadableStream; closed: Promise<void> }
  | { ok: false; status: number; message: string };

/** How a page asked for a log: rendered (the default) or the raw bytes. */
export interface LogRequest {
  raw?: boolean;
}

/** Where a log's bytes go on their way to the page: rendered and cut at maxBytes, or as they are. */
export function logText(raw: boolean | undefined, maxBytes: number, where: string): Transform {
  return raw ? new PassThrough() : renderedLog(maxBytes, where);
}

/** Raw log bytes in, readable lines out (LogRenderer escapes every control character), cut at maxBytes. */
export function renderedLog(maxBytes: number, where = 'kubectl logs'): Transform {
  let written = 0;
  let cut = false;
  const out = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (!cut) renderer.push(chunk);
      done();
    },
    flush(done) {
      if (!cut) renderer.end();
      done();
    },
  });
  const renderer = new LogRenderer((text) => {
    if (cut) return;
    written += Buffer.byteLength(text);
    if (written <= maxBytes) out.push(text);
    else {
      // Ending the text ends the page's response, which ends the request to the apiserver.
      cut = true;
      const size = maxBytes >= 1 << 20 ? `${Math.round(maxBytes / (1 << 20))} MiB` : `${maxBytes} bytes`;
      out.push(`--- cut at ${size}: ${where} has the rest ---\n`);
      out.push(null);
    }
  }, RENDER_WIDTH);
  return out;
}
