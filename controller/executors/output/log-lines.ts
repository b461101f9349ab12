// A log's bytes, cut anywhere, into lines, holding at most `max` bytes of one line: of a longer line only its
// head is kept and the rest is counted, so a 100 MB line without a newline costs `max` bytes of memory and one
// pass over its bytes. Lines are decoded only when whole, so a character split between pieces stays whole.

/** One line without its newline (and a `\r` before it): its head when it was longer than the bound. */
export interface LogLine {
  text: string;
  /** The line's size in bytes, all of it (more than the text holds when cut). */
  bytes: number;
  cut: boolean;
}

const NEWLINE = 0x0a;
const CR = 0x0d;

export class LogLineSplitter {
  private readonly max: number;
  private readonly onLine: (line: LogLine) => void;
  /** The head of the line being read: pieces of the pushed chunks, `held` bytes in all (at most max). */
  private head: Uint8Array[] = [];
  private held = 0;
  private bytes = 0;
  /** The last byte of the line so far: a `\r` before the newline is not part of the line. */
  private last = -1;

  constructor(max: number, onLine: (line: LogLine) => void) {
    this.max = max;
    this.onLine = onLine;
  }

  push(chunk: Uint8Array): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start);
      this.take(chunk, start, newline === -1 ? chunk.length : newline);
      if (newline === -1) return;
      this.flush();
      start = newline + 1;
    }
  }

  /** The last line, if the log does not end with a newline. */
  end(): void {
    if (this.bytes > 0) this.flush();
  }

  private take(chunk: Uint8Array, start: number, end: number): void {
    if (end <= start) return;
    this.bytes += end - start;
    this.last = chunk[end - 1] ?? -1;
    const keep = Math.min(end, start + this.max - this.held);
    if (keep <= start) return;
    this.head.push(chunk.subarray(start, keep));
    this.held += keep - start;
  }

  private flush(): void {
    const cut = this.bytes > this.held;
    const cr = this.last === CR ? 1 : 0;
    const bytes = this.bytes - cr;
    const whole = Buffer.concat(this.head, this.held);
    const head = cut ? whole : whole.subarray(0, whole.length - cr);
    this.head = [];
    this.held = 0;
    this.bytes = 0;
    this.last = -1;
    this.onLine({ text: head.toString('utf8'), bytes, cut });
  }
}
