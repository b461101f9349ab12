// Incremental newline splitting over raw bytes with a hard cap per line, so one runaway line (a base64 blob,
// a minified bundle) cannot make us buffer gigabytes. Works on bytes so a UTF-8 character split across
// chunks is reassembled before decoding.

export const DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024;

export interface LineSplitter {
  push(chunk: Buffer): void;
  /** Emits the unterminated last line, if any. */
  end(): void;
  /** Lines longer than the cap: skipped, only counted. */
  readonly droppedLines: number;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

export function createLineSplitter(
  onLine: (line: Buffer) => void,
  maxLineBytes: number = DEFAULT_MAX_LINE_BYTES,
): LineSplitter {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // True while skipping the rest of an over-long line up to its newline.
  let overflowing = false;
  let droppedLines = 0;

  const emit = (line: Buffer): void => {
    const end = line.length > 0 && line[line.length - 1] === CARRIAGE_RETURN ? line.length - 1 : line.length;
    onLine(line.subarray(0, end));
  };

  const drop = (): void => {
    pending = [];
    pendingBytes = 0;
    droppedLines++;
  };

  return {
    get droppedLines() {
      return droppedLines;
    },
    push(chunk: Buffer): void {
      let start = 0;
      while (start <= chunk.length) {
        const newline = chunk.indexOf(NEWLINE, start);
        const stop = newline === -1 ? chunk.length : newline;
        const piece = chunk.subarray(start, stop);
        if (overflowing) {
          if (newline !== -1) overflowing = false;
        } else if (pendingBytes + piece.length > maxLineBytes) {
          drop();
          overflowing = newline === -1;
        } else if (newline === -1) {
          // Copy: keeping a view would pin the caller's (possibly huge) chunk in memory.
          if (piece.length > 0) pending.push(Buffer.from(piece));
          pendingBytes += piece.length;
        } else {
          const line = pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
          pending = [];
          pendingBytes = 0;
          emit(line);
        }
        if (newline === -1) return;
        start = newline + 1;
      }
    },
    end(): void {
      if (overflowing) {
        overflowing = false;
        return;
      }
      if (pendingBytes > 0) {
        const line = Buffer.concat(pending);
        pending = [];
        pendingBytes = 0;
        emit(line);
      }
    },
  };
}
