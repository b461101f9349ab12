// Small filesystem helpers shared by the executors and the status sink.
import { closeSync, constants, ftruncateSync, openSync, statSync, truncateSync, unlinkSync, writeSync } from 'node:fs';

/** Removes a file if it is there; a clean-up step must never replace the error or result it cleans up after. */
export function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone, or not ours to remove: nothing more to do
  }
}

/** Empties a file that is reused (kept, so its inode is not freed and created again); quiet like removeQuietly. */
export function emptyQuietly(file: string): void {
  try {
    if (statSync(file).size > 0) truncateSync(file, 0);
  } catch {
    // missing already, or unwritable: the next process truncates it anyway
  }
}

/**
 * Replaces the contents of a reused file in place: write at offset 0, then cut to length. Truncating to zero
 * first (what writeFileSync does) frees the file's blocks and allocates them again, which costs ~0.2 ms on a
 * disk mounted with `discard` (each free is a synchronous TRIM); in place it is ~0.01 ms.
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
