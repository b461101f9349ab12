// Runs the real episode runner (`episodic episode ...`, bin/episodic.js on dist/) as a subprocess, the way an
// episode pod runs it, and collects what the pod would show: stdout (kubectl logs), stderr, exit code and
// the termination message.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EPISODE_CONFIG_ENV, EPISODE_PROMPT_ENV } from '../../controller/api/episode-config.ts';
import type { EpisodeResult } from '../../controller/api/episode-result.ts';
import { decodeTerminationMessage } from '../../controller/api/termination-message.ts';
import { cliEntry } from '../support/cli-entry.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const fakeClaude = [
  process.execPath,
  path.join(repoRoot, 'test/agents/fake-claude.mjs'),
  '-p',
  '--output-format',
  'stream-json',
  '--verbose',
];

/** An inline Node agent: `node -e SCRIPT`. */
export function nodeAgent(script: string): string[] {
  return [process.execPath, '-e', script];
}

export function episodeConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    task: 'demo',
    namespace: 'team-a',
    episode: 1,
    maxEpisodes: 5,
    promptVia: 'stdin',
    output: 'auto',
    completion: { promise: 'COMPLETE', onExitZero: false },
    timeoutSeconds: 60,
    ...overrides,
  };
}

export interface RunnerRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The raw termination message. */
  terminationMessage: string;
  result: EpisodeResult | undefined;
}

export interface RunnerInput {
  agent: string[];
  /** Serialized as EPISODIC_EPISODE_CONFIG; a string is passed as-is (to test bad JSON). */
  config?: Record<string, unknown> | string;
  prompt?: string;
  env?: Record<string, string>;
  /** Passed as --log-file. */
  logFile?: string;
  /** Put `--` before the agent argv (default true; the runner does not need it). */
  dashDash?: boolean;
  /** Called once the runner is spawned, e.g. to signal it. */
  onSpawn?: (child: ReturnType<typeof spawn>) => void;
}

const createdDirs: string[] = [];

export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `episodic-${prefix}-`));
  createdDirs.push(dir);
  return dir;
}

/** For after(): delete every directory tempDir() made. */
export async function removeTempDirs(): Promise<void> {
  await Promise.all(createdDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

export async function runRunner(input: RunnerInput): Promise<RunnerRun> {
  const dir = await tempDir('runner');
  const resultFile = path.join(dir, 'termination-log');
  const env: Record<string, string> = { ...cleanEnv(), ...input.env };
  if (input.config !== undefined) {
    env[EPISODE_CONFIG_ENV] = typeof input.config === 'string' ? input.config : JSON.stringify(input.config);
  }
  if (input.prompt !== undefined) env[EPISODE_PROMPT_ENV] = input.prompt;
  const child = spawn(
    process.execPath,
    [
      cliEntry(),
      'episode',
      '--result-file',
      resultFile,
      ...(input.logFile ? ['--log-file', input.logFile] : []),
      ...(input.dashDash === false ? [] : ['--']),
      ...input.agent,
    ],
    { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  input.onSpawn?.(child);
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  const terminationMessage = await readFile(resultFile, 'utf8').catch(() => '');
  return { code, stdout, stderr, terminationMessage, result: decodeTerminationMessage(terminationMessage) };
}

/** The test's environment without anything that would change what the runner or the agent does. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(EPISODIC_|FAKE_AGENT_|GIT_|NODE_TEST)/.test(key)) continue;
    if (key === 'username' || key === 'password') continue;
    env[key] = value;
  }
  return env;
}
