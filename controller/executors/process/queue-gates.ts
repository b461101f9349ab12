// The merge queue's gates: run in the rebased tree (the queue's clone locally, a gate pod's clone on a
// cluster), from argv without a shell, each in its own process group, killed past its timeout; their output
// goes to `out` (a log file locally, the pod's log on a cluster). Resolution episodes are the task's episodes:
// they run through the EpisodeExecutor port.
import { spawn } from 'node:child_process';
import type { Gate, GateRun } from '../../api/gates.ts';
import { runGates } from './gates.ts';
import type { ProcessEnd } from './agent-process.ts';
import { killProcessTree } from './process-tree.ts';

interface Run {
  argv: readonly string[];
  cwd: string;
  timeoutMs: number;
  out: (chunk: Buffer) => void;
}

function runProcess(r: Run): Promise<ProcessEnd> {
  const [file, ...args] = r.argv;
  return new Promise((resolve) => {
    const child = spawn(file as string, args, {
      cwd: r.cwd,
      env: process.env,
      detached: true, // its own process group: the timeout kills the whole tree
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) void killProcessTree(child.pid);
    }, r.timeoutMs);
    child.stdout.on('data', r.out);
    child.stderr.on('data', r.out);
    child.stdin.on('error', () => undefined);
    child.stdin.end('');
    const done = (exitCode: number | null, signal: NodeJS.Signals | null, spawnErrorMessage?: string) => {
      clearTimeout(timer);
      resolve({
        exitCode,
        signal,
        timedOut,
        cancelled: false,
        ...(spawnErrorMessage ? { spawnErrorMessage } : {}),
      } as ProcessEnd);
    };
    child.on('error', (err) => done(null, null, `cannot start ${file}: ${err.message}`));
    child.on('close', (code, signal) => done(code, signal));
  });
}

/** The queue's gates in `cwd`, each gate's fix then check, stopping at the first failure. */
export function runQueueGates(
  gates: readonly Gate[],
  cwd: string,
  out: (chunk: Buffer) => void,
  cancelled: () => boolean = () => false,
): Promise<GateRun[]> {
  return runGates(gates, {
    run: (argv, timeoutMs, onOutput) =>
      runProcess({
        argv,
        cwd,
        timeoutMs,
        out: (chunk) => {
          out(chunk);
          onOutput(chunk);
        },
      }),
    note: (text) => out(Buffer.from(`episodic: ${text}\n`)),
    cancelled,
  });
}
