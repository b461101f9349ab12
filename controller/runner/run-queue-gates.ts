// What `episodic queue-gates` does in a cluster merge queue's gate pod: clone the queue's scratch branch (the
// rebased tree), check it is the commit the queue means, run the queue's gates there as the local queue runs
// them (executors/process/queue-gates.ts), and report the runs in the termination message. Nothing is pushed:
// the gates judge the tree, the queue pushes (or starts a resolution episode) itself.
import { writeFile } from 'node:fs/promises';
import { episodeResult } from '../api/episode-result.ts';
import type { EpisodeResult, ErrorClass } from '../api/episode-result.ts';
import { QUEUE_GATES_CONFIG_ENV, QueueGatesConfigSchema } from '../api/queue-gates-config.ts';
import type { QueueGatesConfig } from '../api/queue-gates-config.ts';
import { redact } from '../api/redaction.ts';
import { encodeTerminationMessage } from '../api/termination-message.ts';
import { runQueueGates } from '../executors/process/queue-gates.ts';
import { takeGitCredentials } from '../git/git-credentials.ts';
import type { GitCredentials } from '../git/git-credentials.ts';
import { git, prepareGitWorkspace } from '../git/git-workspace.ts';
import { EXIT_BAD_CONFIG } from './run-episode.ts';

export interface QueueGatesRunnerOptions {
  resultFile: string;
  /** Normally process.env: the gates inherit it, so git credentials are deleted from it first. */
  env: NodeJS.ProcessEnv;
  /** The gates' output (the pod log). */
  stdout: NodeJS.WritableStream;
  log: (line: string) => void;
  signal?: AbortSignal;
}

/** The process exit code: 0 when every gate passed, 1 when one failed or could not run, 2 for a bad config. */
export async function runQueueGatesPod(opts: QueueGatesRunnerOptions): Promise<number> {
  const startedAt = Date.now();
  const credentials = takeGitCredentials(opts.env); // before anything: no gate may see them
  const config = readConfig(opts.env);
  if (!config.ok) return finish(opts, failed('fatal', config.message, startedAt), EXIT_BAD_CONFIG);
  try {
    return await runConfigured(opts, config.value, credentials, startedAt);
  } catch (err) {
    const message = redact(`queue gate runner failed: ${(err as Error).message ?? String(err)}`, [credentials?.token]);
    return finish(opts, failed('transient', message, startedAt));
  }
}

async function runConfigured(
  opts: QueueGatesRunnerOptions,
  config: QueueGatesConfig,
  credentials: GitCredentials | undefined,
  startedAt: number,
): Promise<number> {
  const dir = config.workspaceDir;
  opts.log(`${config.namespace}/${config.task}: merge queue ${config.queue}, gates on ${config.commit.slice(0, 12)}`);
  const ws = { url: config.git.url, ref: config.git.ref, dir, credentials, log: opts.log };
  const cloned = await prepareGitWorkspace(ws);
  if (!cloned.ok) return finish(opts, failed(cloned.errorClass, cloned.message, startedAt));
  const head = (await git(ws, ['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim();
  if (head !== config.commit) {
    const message = `the scratch branch ${config.git.ref} is at ${head.slice(0, 12)}, not the queue's ${config.commit.slice(0, 12)}`;
    return finish(opts, failed('transient', message, startedAt));
  }
  const runs = await runQueueGates(
    config.gates,
    dir,
    (chunk) => opts.stdout.write(chunk),
    () => opts.signal?.aborted === true,
  );
  const failedRun = runs.find((r) => r.exitCode !== 0);
  const result = episodeResult({
    exitCode: failedRun ? 1 : 0,
    ...(opts.signal?.aborted ? { cancelled: true } : {}),
    gates: runs,
    message: failedRun ? `queue gate ${failedRun.name} failed` : `${runs.length} queue gate(s) passed`,
    durationMs: Date.now() - startedAt,
  });
  return finish(opts, result, failedRun || runs.length < config.gates.length ? 1 : 0);
}

function readConfig(env: NodeJS.ProcessEnv): { ok: true; value: QueueGatesConfig } | { ok: false; message: string } {
  const raw = env[QUEUE_GATES_CONFIG_ENV];
  if (!raw) return { ok: false, message: `${QUEUE_GATES_CONFIG_ENV} is not set` };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    return { ok: false, message: `${QUEUE_GATES_CONFIG_ENV} is not valid JSON: ${(err as Error).message}` };
  }
  const parsed = QueueGatesConfigSchema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  return { ok: false, message: `invalid ${QUEUE_GATES_CONFIG_ENV}: ${issues.join('; ')}` };
}

async function finish(opts: QueueGatesRunnerOptions, result: EpisodeResult, exitCode = 1): Promise<number> {
  try {
    await writeFile(opts.resultFile, encodeTerminationMessage(result));
  } catch (err) {
    opts.log(`cannot write the result to ${opts.resultFile}: ${(err as Error).message}`);
  }
  opts.log(`queue gates finished: ${result.message ?? ''}`);
  return exitCode;
}

function failed(errorClass: ErrorClass, message: string, startedAt: number): EpisodeResult {
  return episodeResult({ exitCode: null, errorClass, message, durationMs: Date.now() - startedAt });
}
