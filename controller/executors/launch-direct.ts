// Starting a process from the controller itself (execa): the fallback when the spawn helper cannot run,
// and the runner's way inside an episode pod. Output streams live into the log and the analyzer.
import { createWriteStream } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { execa as Execa } from 'execa';
import type { Launch, LaunchOptions } from './launch.ts';
import { launchFailure } from './launch.ts';

// A descendant we could not kill may hold the output pipes open; stop waiting for EOF after this long.
const STREAM_DRAIN_MS = 2000;

export async function launchDirect(opts: LaunchOptions): Promise<Launch> {
  const [file, ...args] = opts.argv;
  // Reported like a missing command: a configuration error that retrying cannot fix.
  if (file === undefined) return launchFailure('ENOENT', 'cannot start (empty command): empty argv');
  // Loaded on first use: the local controller normally starts agents through the spawn helper, and execa
  // is ~80 ms of every CLI start-up.
  const { execa } = await import('execa');
  let log: Writable;
  let subprocess: ReturnType<typeof Execa>;
  try {
    log = createWriteStream(opts.logFile, { flags: 'a' });
    log.on('error', () => {}); // a broken log must not crash the controller or fail the episode
    subprocess = execa(file, args, {
      cwd: opts.cwd,
      env: opts.env,
      extendEnv: true,
      detached: true, // leads its own process group, so the group can be signalled as a whole
      buffer: false, // never hold the output in memory: a chatty agent can print gigabytes
      reject: false,
      stdin: opts.stdinFile === undefined ? 'ignore' : { file: opts.stdinFile },
      stdout: 'pipe',
      stderr: 'pipe',
    });
  } catch (err) {
    return launchFailure(errorCode(err), `cannot start ${file}: ${errorText(err)}`);
  }
  const pid = subprocess.pid;
  if (pid === undefined) {
    return subprocess.then(
      (r) => {
        log.end();
        const cause = r.cause instanceof Error ? r.cause.message : r.shortMessage;
        return launchFailure(r.code ?? 'ESPAWN', `cannot start ${file}: ${cause}`);
      },
      (err: unknown) => {
        log.end();
        return launchFailure(errorCode(err), `cannot start ${file}: ${errorText(err)}`);
      },
    );
  }
  const outputs = [streamOutput(subprocess.stdout, 'stdout', log, opts), streamOutput(subprocess.stderr, 'stderr', log, opts)];
  const exited = new Promise<{ code: number | null; signal?: NodeJS.Signals }>((resolve) =>
    subprocess.once('exit', (code, signal) => resolve({ code, ...(signal ? { signal } : {}) })),
  );
  return {
    ok: true,
    pid,
    exited,
    release: () => undefined, // it already runs: only the helper can hold a process before exec
    mayHaveLeftovers: () => true, // only a /proc scan can tell
    async collectOutput() {
      await drain(outputs);
      await subprocess.catch(() => undefined);
      await new Promise<void>((done) => {
        if (log.destroyed || log.errored) return done();
        log.once('error', () => done());
        log.end(() => done());
      });
    },
  };
}

function streamOutput(stream: Readable | null, name: 'stdout' | 'stderr', log: Writable, opts: LaunchOptions) {
  if (!stream) return undefined;
  const onOutput = opts.onOutput;
  if (onOutput) {
    stream.on('data', (chunk: Buffer) => {
      try {
        onOutput(chunk, name);
      } catch {
        // A throwing consumer must not crash the controller from inside a stream event; the log still has it.
      }
    });
  }
  // pipe() applies backpressure: if the log disk is slow the agent blocks on write instead of us buffering.
  stream.pipe(log, { end: false });
  // If the log fails, pipe() detaches; keep reading so the agent is not blocked on a full pipe forever.
  log.once('error', () => stream.resume());
  return stream;
}

async function drain(outputs: (Readable | undefined)[]): Promise<void> {
  const streams = outputs.filter((s): s is Readable => s !== undefined);
  const allClosed = Promise.all(streams.map((s) => finished(s).catch(() => undefined)));
  const timedOut = await Promise.race([allClosed.then(() => false), sleep(STREAM_DRAIN_MS, undefined, { ref: false }).then(() => true)]);
  if (timedOut) streams.forEach((s) => s.destroy());
  for (const s of streams) s.unpipe();
}

function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'ESPAWN';
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
