// Episode logs on a local run: the log file, read by byte offset and rendered by the cluster console's path
// (log-text.ts); while the episode runs, the file is followed as it grows and the text ends when it stops.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { type EpisodeLog, type LogRequest, logText } from './log-text.ts';

/** Rendered text per page at most, as on a cluster (pod-logs.ts MAX_STREAM_BYTES). */
export const MAX_LOCAL_LOG_BYTES = 8 * 1024 * 1024;
// A growth event can be missed (the watcher starts after the first write): a slow poll covers it.
const POLL_MS = 1000;

export interface LocalLogInputs extends LogRequest {
  file: string;
  /** Whether the episode still runs: its log may still grow. */
  running: () => boolean;
  /** Calls back when the log may have grown or the episode may have ended; returns the unsubscribe. */
  onChange: (changed: () => void) => () => void;
  signal: AbortSignal;
}

export async function localEpisodeLog(inputs: LocalLogInputs): Promise<EpisodeLog> {
  const running = inputs.running();
  if (!running && (await sizeOf(inputs.file)) === undefined) return { ok: false, status: 404, message: 'no such log' };
  const text = logText(inputs.raw, MAX_LOCAL_LOG_BYTES, 'episodic logs');
  const closed = follow(inputs, text).catch(() => {
    // aborted (the page left) or the file went away: the page shows what came
  });
  return { ok: true, follow: running, text, closed };
}

/** Copies the file into `out` from offset 0 on, until the episode no longer runs and everything is read. */
async function follow(inputs: LocalLogInputs, out: NodeJS.WritableStream & { writableEnded: boolean }) {
  let wake: (() => void) | undefined;
  const unsubscribe = inputs.onChange(() => wake?.());
  const abort = () => wake?.();
  inputs.signal.addEventListener('abort', abort);
  let offset = 0;
  try {
    while (!inputs.signal.aborted && !out.writableEnded) {
      // Asked before the size is read: what an ended episode wrote is all there by the time it no longer runs.
      const running = inputs.running();
      const size = (await sizeOf(inputs.file)) ?? 0;
      if (size > offset) {
        const bytes = createReadStream(inputs.file, { start: offset, end: size - 1 });
        await pipeline(bytes, out, { end: false, signal: inputs.signal });
        offset = size;
        continue;
      }
      if (!running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  } finally {
    unsubscribe();
    inputs.signal.removeEventListener('abort', abort);
    if (!out.writableEnded) out.end();
  }
}

async function sizeOf(file: string): Promise<number | undefined> {
  return (await stat(file).catch(() => undefined))?.size;
}
