// An episode's log, written as the output arrives: stdout unchanged (its JSON lines stay readable by a later
// analysis), stderr line by line behind a `[stderr] ` prefix, our own notes between them. Lines are written
// whole, so a stderr line never lands inside a stdout line. The controller is the log's only writer: a
// process writes its output into spool files of its own (see spoolFiles), which the log follows.
import { createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';

export const STDERR_PREFIX = '[stderr] ';
const PREFIX = Buffer.from(STDERR_PREFIX);
const NEWLINE = Buffer.from('\n');
// A longer unfinished line is written as it is: memory stays bounded whatever an agent prints.
const MAX_PENDING_BYTES = 256 * 1024;

/** Our notes in the log are whole lines of this form; recovery (episode-log-recovery.ts) reads them back. */
export const NOTE_PREFIX = '--- episodic: ';
export const NOTE_SUFFIX = ' ---';

/** The note that records how the agent process ended. */
export function exitNote(exit: { exitCode: number | null; signal?: string }): string {
  const how = exit.exitCode !== null ? `exited ${exit.exitCode}` : `killed by ${exit.signal ?? 'a signal'}`;
  return `${NOTE_PREFIX}agent ${how}${NOTE_SUFFIX}`;
}

/**
 * Where a process of the episode writes its stdout and stderr: files it holds open itself, so what it
 * printed is on disk even if the controller dies before reading it (a pipe's contents would die with it).
 * They live until their bytes are in the log with the notes after them; a restarted controller that finds
 * the agent's folds them into the log (episode-log-recovery.ts).
 */
export function spoolFiles(logFile: string, role: 'agent' | 'verify' | 'gate'): { stdout: string; stderr: string } {
  return { stdout: `${logFile}.${role}-stdout`, stderr: `${logFile}.${role}-stderr` };
}

const NO_ROOM = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

export type OutputListener = (chunk: Buffer, stream: 'stdout' | 'stderr') => void;

export class EpisodeLog {
  private readonly out;
  private broken = false;
  /** Set when a write failed for lack of room (a full disk, a quota, a file size limit): its code. */
  noRoom?: string;

  constructor(file: string) {
    this.out = createWriteStream(file, { flags: 'a' });
    this.out.on('error', (err: NodeJS.ErrnoException) => {
      this.broken = true; // a log we cannot write must not fail the episode; the analysis does not need it
      if (err.code && NO_ROOM.has(err.code)) this.noRoom = err.code;
      this.out.emit('drain'); // streams paused for it read on (into nothing but the analysis)
    });
  }

  note(text: string): void {
    this.write(Buffer.from(text));
  }

  /**
   * Copies a process's output into the log and to `listener` as it arrives. The returned function resolves
   * once both streams ended (a FileTail ends after its stop()), with the unfinished last lines written.
   */
  follow(stdout: Readable, stderr: Readable, listener: OutputListener): () => Promise<void> {
    const streams = { stdout, stderr };
    const pending = { stdout: new PendingLine(), stderr: new PendingLine() };
    // Set while a stdout line longer than MAX_PENDING_BYTES is partly written: stderr lines wait for its end.
    let midLine = false;
    let held: Buffer[] = [];
    let heldBytes = 0;
    const release = (): Buffer[] => {
      const out = held;
      held = [];
      heldBytes = 0;
      return out;
    };
    const toLog = (name: 'stdout' | 'stderr', parts: Buffer[]): boolean => {
      let data: Buffer;
      if (name === 'stdout') {
        data = Buffer.concat(parts);
        midLine = data[data.length - 1] !== 0x0a;
        if (!midLine && held.length > 0) data = Buffer.concat([data, ...release()]);
      } else {
        data = prefixLines(parts);
        if (midLine) {
          held.push(data);
          heldBytes += data.length;
          if (heldBytes <= MAX_PENDING_BYTES) return true;
          // Too much to hold: a line break ends the long stdout line here, so the stderr lines stay apart.
          data = Buffer.concat([NEWLINE, ...release()]);
          midLine = false;
        }
      }
      return this.write(data);
    };
    for (const name of ['stdout', 'stderr'] as const) {
      streams[name].on('data', (chunk: Buffer) => {
        safely(() => listener(chunk, name));
        const whole = pending[name].take(chunk);
        if (whole.length > 0 && !toLog(name, whole)) {
          // Backpressure: a slow disk leaves the output in the spool file instead of in our memory.
          streams[name].pause();
          this.out.once('drain', () => streams[name].resume());
        }
      });
    }
    const ended = Promise.all([stdout, stderr].map((s) => finished(s).then(yes, yes)));
    return async () => {
      await ended;
      stdout.destroy();
      stderr.destroy();
      const err = pending.stderr.rest();
      if (err.length > 0) toLog('stderr', err);
      const out = pending.stdout.rest();
      if (out.length > 0) toLog('stdout', out);
      if (held.length > 0) this.write(Buffer.concat([NEWLINE, ...release()])); // stdout's last line never ended
    };
  }

  /** Resolves once everything written so far reached the file (or the log failed). Never rejects. */
  flushed(): Promise<void> {
    return new Promise((done) => {
      if (this.broken) return done();
      this.out.write(Buffer.alloc(0), () => done());
    });
  }

  /** Resolves once everything is written (or the log failed). Never rejects. */
  close(): Promise<void> {
    return new Promise((done) => {
      if (this.broken) return done();
      this.out.once('error', () => done());
      this.out.end(() => done());
    });
  }

  /** False: wait for 'drain' before writing more. */
  private write(data: Buffer): boolean {
    if (this.broken) return true;
    return this.out.write(data);
  }
}

/** The bytes of a stream's unfinished last line, between chunks. */
class PendingLine {
  private parts: Buffer[] = [];
  private bytes = 0;

  /** Whole lines completed by `chunk` (each with its '\n'; the pending part is merged into the first). */
  take(chunk: Buffer): Buffer[] {
    const last = chunk.lastIndexOf(0x0a);
    const done = last < 0 ? [] : [...this.rest(), chunk.subarray(0, last + 1)];
    if (last + 1 < chunk.length) {
      this.parts.push(chunk.subarray(last + 1));
      this.bytes += chunk.length - last - 1;
      if (this.bytes > MAX_PENDING_BYTES) done.push(...this.rest());
    }
    return done;
  }

  rest(): Buffer[] {
    const parts = this.parts;
    this.parts = [];
    this.bytes = 0;
    return parts;
  }
}

/** `[stderr] ` before every line of the given bytes (which end a line, except after MAX_PENDING_BYTES). */
function prefixLines(parts: Buffer[]): Buffer {
  const text = Buffer.concat(parts);
  const out: Buffer[] = [];
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf(0x0a, start);
    const end = nl < 0 ? text.length : nl + 1;
    out.push(PREFIX, text.subarray(start, end));
    start = end;
  }
  if (text.length > 0 && text[text.length - 1] !== 0x0a) out.push(NEWLINE);
  return Buffer.concat(out);
}

const yes = () => true;

function safely(f: () => void): void {
  try {
    f();
  } catch {
    // A throwing consumer must not crash the controller from inside a stream event; the log still has it.
  }
}
