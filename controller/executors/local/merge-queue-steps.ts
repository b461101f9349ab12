// The merge queue's two kinds of process besides git: a queue's gates and a resolution episode of the task's
// agent, both in the queue's clone, from argv without a shell, in their own process group, killed past
// their timeout; output appended to a log under the queue's directory.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AgentTaskSpec } from '../../api/agent-task.ts';
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

/** One resolution episode: the task's agent with the resolution prompt, in the clone; its exit code. */
export async function runResolutionEpisode(spec: AgentTaskSpec, cwd: string, prompt: string, logFile: string) {
  const agent = spec.agent;
  const env: Record<string, string> = { EPISODIC_MERGE_QUEUE: '1' };
  for (const e of agent.env) if (e.value !== undefined) env[e.name] = e.value;
  let argv = [...agent.command];
  let stdin: string | undefined = prompt;
  if (agent.promptVia === 'argument') {
    argv = [...argv, prompt];
    stdin = undefined;
  } else if (agent.promptVia === 'file') {
    const promptFile = join(dirname(logFile), 'resolution-prompt.md'); // outside the clone: never committed
    writeFileSync(promptFile, prompt);
    env.EPISODIC_PROMPT_FILE = promptFile;
    stdin = undefined;
  }
  return runProcess({ argv, cwd, env, stdin, timeoutMs: spec.limits.episodeTimeoutSeconds * 1000, logFile });
}
