// Small filesystem helpers shared by the executors and the status sink.
import { unlinkSync } from 'node:fs';

/** Removes a file if it is there; a clean-up step must never replace the error or result it cleans up after. */
export function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone, or not ours to remove: nothing more to do
  }
}
