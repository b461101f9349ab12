// Helpers for local-mode end-to-end tests: a temp spec directory, the real CLI as a subprocess, and the
// stand-in agents from test/agents/.
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StoredStatus } from '../../controller/sinks/local/file-status.ts';
import { cliEntry } from './cli-entry.ts';
import { CLI_HANG_GUARD_MS, hangGuardMessage } from './hang-guard.ts';
import { waitFor } from './wait.ts';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const FAKE_CLAUDE = join(REPO, 'test/agents/fake-claude.mjs');
export const FAKE_CODEX = join(REPO, 'test/agents/fake-codex.mjs');
export const NODE = process.execPath;

export function tempDir(prefix = 'episodic-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface TaskOptions {
  name: string;
  namespace?: string;
  /** Extra spec fields, merged over a fake-claude default. */
  spec?: Record<string, unknown>;
  /** Written to ws/NAME/.fake-agent.json: the stand-in agent's script. */
  script?: Record<string, unknown>;
}

/** A manifest as YAML (JSON is valid YAML, and keeps this helper dependency-free). */
export function taskYaml(t: TaskOptions): string {
  const spec = {
    prompt: 'Do the next thing. Episode {{episode}} of {{maxEpisodes}}.',
    agent: { command: [NODE, FAKE_CLAUDE], output: 'claude' },
    workspace: `ws/${t.name}`,
    limits: { maxEpisodes: 10, episodeTimeoutSeconds: 30 },
    backoff: { initialSeconds: 0.2, factor: 2, maxSeconds: 1 },
    ...t.spec,
  };
  const metadata = t.namespace ? { name: t.name, namespace: t.namespace } : { name: t.name };
  return JSON.stringify({ apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentTask', metadata, spec }, null, 2);
}

/** Creates DIR with one file per task (or all in one file) and each task's agent script. */
export function specDir(tasks: TaskOptions[], opts: { dir?: string; file?: string } = {}): string {
  const dir = opts.dir ?? tempDir();
  for (const t of tasks) {
    if (t.script) {
      const ws = join(dir, 'ws', t.name);
      mkdirSync(ws, { recursive: true });
      writeFileSync(join(ws, '.fake-agent.json'), JSON.stringify(t.script));
    }
  }
  if (opts.file) writeFileSync(join(dir, opts.file), tasks.map(taskYaml).join('\n---\n'));
  else for (const t of tasks) writeFileSync(join(dir, `${t.name}.yaml`), taskYaml(t));
  return dir;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * `run`'s log as the tests read it: JSON lines (`--log-format json`) unless a test names a format (text, the
 * default off a terminal, is what a test of the text lines asks for).
 */
export function withJsonLogs(args: string[]): string[] {
  return args[0] === 'run' && !args.includes('--log-format') ? [...args, '--log-format', 'json'] : args;
}

export function runCli(
  args: string[],
  opts: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  // A test's own figure is only ever raised to the hang guard: the work is bounded, a slow machine is not a hang.
  const timeout = Math.max(opts.timeoutMs ?? 0, CLI_HANG_GUARD_MS);
  return new Promise((done) => {
    execFile(
      NODE,
      [cliEntry(), ...withJsonLogs(args)],
      { cwd: opts.cwd ?? REPO, timeout, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...opts.env } },
      (err, stdout, stderr) => {
        const e = err as
          | (NodeJS.ErrnoException & { code?: number | string; signal?: NodeJS.Signals; killed?: boolean })
          | null;
        const guard = e?.killed ? `\n${hangGuardMessage(`episodic ${args.join(' ')}`, timeout)}\n` : '';
        const code = e ? (typeof e.code === 'number' ? e.code : null) : 0;
        done({ code, signal: e?.signal ?? null, stdout, stderr: stderr + guard });
      },
    );
  });
}

/** Starts the CLI in the background (for --watch, kill -9 and SIGINT tests). */
export function startCli(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const env = { ...process.env, ...opts.env };
  const child = spawn(NODE, [cliEntry(), ...withJsonLogs(args)], {
    cwd: opts.cwd ?? REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, output: () => output, exited };
}

/** A status file as the controller writes it (its own schema's type: tests read what the code writes). */
export type StoredStatusFile = StoredStatus;

export function readStatus(dir: string, name: string, namespace = 'default'): StoredStatusFile | undefined {
  const file = join(dir, '.episodic', 'status', namespace, `${name}.json`);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as StoredStatusFile) : undefined;
}

/** A zombie (killed, waiting for init to reap it) counts as dead. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX]/s.test(stat);
  } catch {
    return false;
  }
}

/** Killed processes vanish once the kernel (and init, for orphans) finishes with them: allow a moment. */
export async function assertAllDead(pids: number[], what: string): Promise<void> {
  for (const pid of pids) await waitFor(`${what}: pid ${pid} to be gone`, () => !isAlive(pid), 3000);
}

/** fake-claude that appends each run's stdin (its prompt) to `record`, read back by `recordedPrompts`. */
export function recordingClaude(record: string): Record<string, unknown> {
  return { command: [NODE, FAKE_CLAUDE], output: 'claude', env: [{ name: 'FAKE_AGENT_RECORD', value: record }] };
}

/** The prompts fake-claude recorded, oldest first; none before the first run. */
export function recordedPrompts(record: string): string[] {
  if (!existsSync(record)) return [];
  return readFileSync(record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { stdin?: string }).stdin ?? '');
}

/** An `interrupt: true` worker whose first episode sleeps until a message cancels it; the second succeeds. */
export function interruptWorker(record: string): TaskOptions {
  return {
    name: 'worker',
    script: { episodes: { '1': { mode: 'sleep', sleepSeconds: 300 }, '2': { mode: 'success' } } },
    spec: {
      prompt: 'Work. News:\n{{messages}}',
      interrupt: true,
      agent: recordingClaude(record),
      limits: { maxEpisodes: 3, episodeTimeoutSeconds: 300 },
    },
  };
}
