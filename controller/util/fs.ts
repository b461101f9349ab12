// Small filesystem helpers shared by the executors and the status sink.
import { closeSync, constants, ftruncateSync, openSync, unlinkSync, writeSync } from 'node:fs';

/** Removes a file if it is there; a clean-up step must never replace the error or result it cleans up after. */
export function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone, or not ours to remove: nothing more to do
  }
}

/**
 * Replaces the contents of a reused file in place: write at offset 0, then cut to length. Truncating to zero
 * first (what writeFileSync does) frees the file's blocks and allocates them again, which is slow on a disk
 * mounted with `discard` (each free is a synchronous TRIM; figures in commit 00b7fce).
 * Only for files with one writer and no concurrent reader (a scratch file for the next process).
 */
export function rewriteInPlace(file: string, data: string, mode = 0o600): void {
  const buf = Buffer.from(data);
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT, mode);
  try {
    writeSync(fd, buf, 0, buf.length, 0);
    ftruncateSync(fd, buf.length);
  } finally {
    closeSync(fd);
  }
}
