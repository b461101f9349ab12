// Small filesystem helpers shared by the executors and the status sink.
import { statSync, truncateSync, unlinkSync } from 'node:fs';

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
