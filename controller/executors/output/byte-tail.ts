// The last N bytes of a stream in a fixed ring: constant memory however much the agent prints.

export interface ByteTail {
  push(chunk: Buffer): void;
  /** Bytes ever pushed (not just kept). */
  readonly totalBytes: number;
  /** The kept tail decoded as UTF-8, without a character cut in half at the start. */
  text(): string;
}

export function createByteTail(capacity: number): ByteTail {
  // Grows up to capacity: most episodes print a few hundred bytes, and three 64 KB rings per episode were
  // most of what the controller allocated (and what made V8 collect garbage) per episode.
  let ring = Buffer.allocUnsafe(0);
  let position = 0;
  let full = false;
  let totalBytes = 0;
  const reserve = (needed: number): void => {
    if (ring.length >= needed) return;
    const grown = Buffer.allocUnsafe(Math.min(capacity, Math.max(needed, 2 * ring.length)));
    ring.copy(grown, 0, 0, position);
    ring = grown;
  };

  return {
    get totalBytes() {
      return totalBytes;
    },
    push(chunk: Buffer): void {
      totalBytes += chunk.length;
      if (!full) reserve(Math.min(capacity, position + chunk.length));
      if (chunk.length >= capacity) {
        chunk.copy(ring, 0, chunk.length - capacity);
        position = 0;
        full = true;
        return;
      }
      const firstPart = Math.min(chunk.length, capacity - position);
      chunk.copy(ring, position, 0, firstPart);
      if (firstPart < chunk.length) {
        chunk.copy(ring, 0, firstPart);
        position = chunk.length - firstPart;
        full = true;
      } else {
        position += firstPart;
        if (position === capacity) {
          position = 0;
          full = true;
        }
      }
    },
    text(): string {
      const bytes = full
        ? Buffer.concat([ring.subarray(position), ring.subarray(0, position)])
        : ring.subarray(0, position);
      let start = 0;
      // Skip UTF-8 continuation bytes (10xxxxxx) orphaned by the cut.
      if (full) while (start < bytes.length && start < 3 && (bytes[start] & 0xc0) === 0x80) start++;
      return bytes.subarray(start).toString('utf8');
    },
  };
}
