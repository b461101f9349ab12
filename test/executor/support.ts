// Shared helpers for executor tests: temp workspaces, the stand-in agents, and "is this pid really gone".
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach } from 'node:test';
import type { ProcessEpisodeRequest } from '../../controller/executors/process/episode-request.ts';
import { waitFor } from '../support/wait.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const FAKE_CLAUDE = resolve(here, '../agents/fake-claude.mjs');
export const FAKE_CODEX = resolve(here, '../agents/fake-codex.mjs');

export interface Sandbox {
  root: string;
  /** The workspace (agent cwd). */
  ws: string;
  logFile: string;
  cleanup(): void;
}

export function sandbox(): Sandbox {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'episodic-exec-')));
  const ws = join(root, 'ws');
  mkdirSync(ws, { recursive: true });
  return {
    root,
    ws,
    logFile: join(root, 'state', 'logs', 'default', 'demo', 'episode-1.log'),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** A fresh sandbox for every test of the file, and pids a test wants SIGKILLed however it ends. */
export function sandboxPerTest(): { box: Sandbox; leftovers: number[] } {
  const t = { box: undefined as unknown as Sandbox, leftovers: [] as number[] };
  beforeEach(() => {
    t.box = sandbox();
    t.leftovers = [];
  });
  afterEach(() => {
    killAll(t.leftovers);
    t.box.cleanup();
  });
  return t;
}

export function request(box: Sandbox, overrides: Partial<ProcessEpisodeRequest> = {}): ProcessEpisodeRequest {
  return {
    namespace: 'default',
    name: 'demo',
    episode: 1,
    maxEpisodes: 5,
    argv: [process.execPath, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'],
    promptVia: 'stdin',
    prompt: 'Implement the next item of PLAN.md',
    env: {},
    cwd: box.ws,
    timeoutMs: 30_000,
    killGraceMs: 300,
    logFile: box.logFile,
    onExitZero: false,
    analyzer: { format: 'auto', promise: 'COMPLETE' },
    ...overrides,
  };
}

/** Gone = no such process, or a zombie (an orphan waits for pid 1 to reap it, which may be late; it cannot run). */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return true;
    throw err;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** The pids a fake agent in sleep mode wrote: itself first, then its hard-to-kill descendants. */
export async function readPidFile(file: string): Promise<number[]> {
  await waitFor(`pid file ${file}`, () => existsSync(file) && readFileSync(file, 'utf8').split('\n').length >= 6);
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);
}

/** Test hygiene: never leave sleepers behind, even when an assertion failed. */
export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export function readRecords(file: string): Array<Record<string, unknown> & { env: Record<string, string> }> {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}
