// A growing file read as a stream, like `tail -f`, the one file follower: an agent writes its output straight
// into a spool file, which keeps the bytes whatever happens to the controller, and the controller follows it
// for the episode log and the live analysis; in a pod the runner follows the episode log to stdout. New bytes are noticed through inotify (fs.watch), or by polling where
// it is not available; a paused reader leaves them on disk (backpressure costs no memory).
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';

const CHUNK_BYTES = 64 * 1024;
// Without fs.watch (out of inotify watches, a file system without it): how often to look for new bytes.
const POLL_MS = 200;

export class FileTail extends Readable {
  private readonly file: string;
  private handle?: FileHandle;
  private position = 0;
  /** Set by stop(): end at the size the file has then. */
  private stopping = false;
  private endAt?: number;
  private changed = false;
  private wake?: () => void;
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
  private readonly buffer = Buffer.allocUnsafe(CHUNK_BYTES);

  /** `file` must exist; reading starts at byte `from` (an appended-to log at its old size). */
  constructor(file: string, from = 0) {
    super({ highWaterMark: CHUNK_BYTES });
    this.file = file;
    this.position = from;
    try {
      this.watcher = watch(file, { persistent: false }, () => this.poke());
      this.watcher.on('error', () => this.pollInstead());
    } catch {
      this.pollInstead();
    }
  }

  /** Read what the file holds now, then end. Call it once nothing writes the file any more. */
  stop(): void {
    this.stopping = true;
    this.poke();
  }

  override _read(): void {
    void this.readMore().catch((err: unknown) => this.destroy(err as Error));
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.watcher?.close();
    clearInterval(this.timer);
    this.wake?.();
    const handle = this.handle;
    this.handle = undefined;
    const closed = handle ? handle.close() : Promise.resolve();
    closed.then(
      () => done(err),
      () => done(err),
    );
  }

  /** Pushes the next chunk, waiting for the file to grow if it has none yet; ends after stop(). */
  private async readMore(): Promise<void> {
    if (!this.handle) {
      const handle = await open(this.file, 'r');
      if (this.destroyed) return void (await handle.close());
      this.handle = handle;
    }
    for (;;) {
      this.changed = false;
      // Decided before the read, so a write that came just before stop() is never missed.
      if (this.stopping && this.endAt === undefined) this.endAt = (await this.handle.stat()).size;
      const want = Math.min(CHUNK_BYTES, (this.endAt ?? Number.POSITIVE_INFINITY) - this.position);
      if (want <= 0) {
        this.push(null); // a writer we could not kill may go on writing: what came after stop() is not ours
        return;
      }
      const { bytesRead } = await this.handle.read(this.buffer, 0, want, this.position);
      if (this.destroyed) return;
      if (bytesRead > 0) {
        this.position += bytesRead;
        this.push(Buffer.from(this.buffer.subarray(0, bytesRead)));
        return;
      }
      if (this.endAt !== undefined) {
        this.push(null); // truncated under us: nothing more to read
        return;
      }
      if (!this.changed) await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
      if (this.destroyed) return;
    }
  }

  private poke(): void {
    this.changed = true;
    this.wake?.();
  }

  private pollInstead(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.timer ??= setInterval(() => this.poke(), POLL_MS).unref();
  }
}
