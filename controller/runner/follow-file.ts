// Copies a growing file to a stream, like `tail -f`: the episode executor writes the agent's output to a
// log file, and in a pod that output must also reach stdout so `kubectl logs` shows it live. The reading is
// util/file-tail.ts's; this adds waiting for the file to appear and a write that a closed stdout cannot hang.
import { access } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { FileTail } from '../util/file-tail.ts';

// How often to look for a log file that does not exist yet.
const POLL_MS = 100;

export interface FileFollower {
  /** Copy what is left, then stop. */
  stop(): Promise<void>;
}

/** Copy `file` from byte `fromByte` on (an appended-to log starts at its old size). */
export function followFile(file: string, out: NodeJS.WritableStream, fromByte = 0): FileFollower {
  let stopping = false;
  let tail: FileTail | undefined;
  const done = (async () => {
    if (!(await waitForFile(file, () => stopping))) return;
    tail = new FileTail(file, fromByte);
    if (stopping) tail.stop(); // stop() came while waiting: copy what the file holds, then end
    for await (const chunk of tail) await write(out, chunk as Buffer);
  })().catch(() => {}); // losing the live copy must never fail the episode: the log file still has it

  return {
    async stop() {
      stopping = true;
      tail?.stop();
      await done;
    },
  };
}

async function waitForFile(file: string, stopped: () => boolean): Promise<boolean> {
  for (;;) {
    try {
      await access(file);
      return true;
    } catch {
      // stop() may have come while this look was under way: one more look decides.
      if (stopped())
        return access(file).then(
          () => true,
          () => false,
        );
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
