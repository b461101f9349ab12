// The merge queue's gates: run in the queue's clone, from argv without a shell, in their own process group,
// killed past their timeout; output appended to a log under the queue's directory. (Resolution episodes are
// the task's episodes: they run through the EpisodeExecutor port.)
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Gate, GateRun } from '../../api/gates.ts';
import { runGates } from '../process/gates.ts';
import type { ProcessEnd } from '../process/agent-process.ts';
import { killProcessTree } from '../process/process-tree.ts';

interface Run {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  stdin?: string;
  timeoutMs: number;
  logFile: string;
  onOutput?: (chunk: Buffer) => void;
}

function runProcess(r: Run): Promise<ProcessEnd> {
  mkdirSync(dirname(r.logFile), { recursive: true });
  const [file, ...args] = r.argv;
  const fd = openSync(r.logFile, 'a');
  return new Promise((resolve) => {
    const child = spawn(file as string, args, {
      cwd: r.cwd,
      env: { ...process.env, ...r.env },
      detached: true, // its own process group: the timeout kills the whole tree
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) void killProcessTree(child.pid);
    }, r.timeoutMs);
    const out = (chunk: Buffer) => {
      writeFileSync(fd, chunk);
      r.onOutput?.(chunk);
    };
    child.stdout.on('data', out);
    child.stderr.on('data', out);
    child.stdin.on('error', () => undefined);
    child.stdin.end(r.stdin ?? '');
    const done = (exitCode: number | null, signal: NodeJS.Signals | null, spawnErrorMessage?: string) => {
      clearTimeout(timer);
      closeSync(fd);
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

/** The queue's gates in the rebased tree, each gate's fix then check, stopping at the first failure. */
export function runQueueGates(gates: readonly Gate[], cwd: string, logFile: string): Promise<GateRun[]> {
  return runGates(gates, {
    run: (argv, timeoutMs, onOutput) => runProcess({ argv, cwd, env: {}, timeoutMs, logFile, onOutput }),
    note: () => undefined,
    cancelled: () => false,
  });
}
