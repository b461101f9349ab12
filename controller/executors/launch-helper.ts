// Starting a process through the spawn helper: the child writes straight into the episode log (stdout) and a
// side file (stderr), so no output passes through the controller while it runs. After exit the controller
// reads both once, for the analyzer, and appends stderr to the log.
import { closeSync, createReadStream, openSync, readSync, statSync, writeSync } from 'node:fs';
import { emptyQuietly, removeQuietly } from '../util/fs.ts';
import type { Launch, LaunchOptions } from './launch.ts';
import { launchFailure } from './launch.ts';
import type { SpawnHelper } from './spawn-helper.ts';

export async function launchViaHelper(helper: SpawnHelper, opts: LaunchOptions): Promise<Launch> {
  const stderrFile = opts.stderrFile ?? `${opts.logFile}.stderr`;
  // A given scratch file is emptied, not removed: on some file systems every file created and deleted per
  // episode slows down the next creations (ext4 without a journal skips recently freed inodes one by one).
  const discardStderr = () => (opts.stderrFile ? emptyQuietly(stderrFile) : removeQuietly(stderrFile));
  let offset: number;
  try {
    // The child creates the log (or appends, e.g. verify after the agent): its output starts at today's end.
    // Not created here, so the create overlaps the status write instead of preceding it.
    offset = statSync(opts.logFile, { throwIfNoEntry: false })?.size ?? 0;
  } catch (err) {
    return launchFailure((err as NodeJS.ErrnoException).code ?? 'ESETUP', `cannot open log ${opts.logFile}: ${(err as Error).message}`);
  }
  const started = await helper.spawn({ argv: opts.argv, cwd: opts.cwd, env: opts.env, stdinFile: opts.stdinFile, stdoutFile: opts.logFile, stderrFile, hold: opts.hold });
  if (!started.ok) {
    discardStderr();
    // The helper's own messages say what failed ("cannot start X: …", "cannot enter DIR: …").
    const message = started.message.startsWith('cannot ') ? started.message : `cannot start ${opts.argv[0] ?? '(empty command)'}: ${started.message}`;
    return launchFailure(started.code, message);
  }
  return {
    ok: true,
    pid: started.pid,
    exited: started.exit.then((e) => {
      if (e.helperLost) return { code: null, lost: e.helperLost };
      if (e.spawnError) return { code: null, spawnError: e.spawnError };
      return { code: e.code, ...(e.signal ? { signal: e.signal } : {}) };
    }),
    release: started.release,
    mayHaveLeftovers: () => helper.mayHaveLeftovers(started.pid),
    async collectOutput() {
      try {
        await readInto(opts.logFile, offset, (chunk) => opts.onOutput?.(chunk, 'stdout'));
        if (statSync(stderrFile).size > 0) {
          const log = openSync(opts.logFile, 'a');
          try {
            writeSync(log, '\n--- episodic: stderr ---\n');
            await readInto(stderrFile, 0, (chunk) => {
              writeSync(log, chunk);
              opts.onOutput?.(chunk, 'stderr');
            });
          } finally {
            closeSync(log);
          }
        }
      } catch {
        // A log we cannot read is not the agent's failure; the analysis sees what it got.
      } finally {
        discardStderr();
      }
    },
  };
}

// Most episodes print little: read that in one go instead of through a stream.
const SMALL_OUTPUT = 1024 * 1024;

async function readInto(file: string, start: number, onChunk: (chunk: Buffer) => void): Promise<void> {
  const size = statSync(file).size;
  if (size <= start) return;
  if (size - start <= SMALL_OUTPUT) {
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.allocUnsafe(size - start);
      const n = readSync(fd, buf, 0, buf.length, start);
      safely(() => onChunk(buf.subarray(0, n)));
    } finally {
      closeSync(fd);
    }
    return;
  }
  for await (const chunk of createReadStream(file, { start, highWaterMark: 256 * 1024 })) {
    safely(() => onChunk(chunk as Buffer));
  }
}

function safely(f: () => void): void {
  try {
    f();
  } catch {
    // A throwing consumer must not lose the rest of the output.
  }
}
