// Copies a growing file to a stream, like `tail -f`: the episode executor writes the agent's output to a
// log file, and in a pod that output must also reach stdout so `kubectl logs` shows it live.
import { open } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 100;
const CHUNK_BYTES = 64 * 1024;

export interface FileFollower {
  /** Copy what is left, then stop. */
  stop(): Promise<void>;
}

/** Copy `file` from byte `fromByte` on (an appended-to log starts at its old size). */
export function followFile(file: string, out: NodeJS.WritableStream, fromByte = 0): FileFollower {
  let stopping = false;
  const done = (async () => {
    const buffer = Buffer.alloc(CHUNK_BYTES);
    let position = fromByte;
    const handle = await waitForFile(file, () => stopping);
    if (!handle) return;
    try {
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
        if (bytesRead > 0) {
          position += bytesRead;
          await write(out, Buffer.from(buffer.subarray(0, bytesRead)));
          continue;
        }
        if (stopping) return; // at end of file after stop(): everything is copied
        await sleep(POLL_MS);
      }
    } finally {
      await handle.close();
    }
  })().catch(() => {}); // losing the live copy must never fail the episode: the log file still has it

  return {
    async stop() {
      stopping = true;
      await done;
    },
  };
}

async function waitForFile(file: string, stopped: () => boolean) {
  for (;;) {
    try {
      return await open(file, 'r');
    } catch {
      if (stopped()) return undefined;
      await sleep(POLL_MS);
    }
  }
}

function write(out: NodeJS.WritableStream, chunk: Buffer): Promise<void> {
  return new Promise((resolve) => {
    if (out.write(chunk)) return resolve();
    // A closed stdout (EPIPE) must not hang the runner.
    const settle = () => {
      out.off('drain', settle).off('error', settle).off('close', settle);
      resolve();
    };
    out.once('drain', settle).once('error', settle).once('close', settle);
  });
}
