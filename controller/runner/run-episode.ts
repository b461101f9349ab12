// The episode runner: what `episodic episode -- <agent argv>` does inside an episode pod. It turns the
// controller's environment contract into one local episode (startProcessEpisode), wraps a git workspace
// around it, and reports the EpisodeResult through the termination message.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { clip } from '../api/bounds.ts';
import { episodeResult } from '../api/episode-result.ts';
import type { EpisodeResult, ErrorClass } from '../api/episode-result.ts';
import { analyzerOptions } from '../executors/output/analyzer-options.ts';
import { checklistRule } from '../executors/process/episode-request.ts';
import { startProcessEpisode } from '../executors/process/process-episode.ts';
import { readEpisodeConfig, readPrompt } from './episode-input.ts';
import type { RunnerConfig } from './episode-input.ts';
import { followFile } from './follow-file.ts';
import { writeCodexGatewayHome } from './codex-home.ts';
import { redact } from '../api/redaction.ts';
import { takeGitCredentials } from '../git/git-credentials.ts';
import type { GitCredentials } from '../git/git-credentials.ts';
import { gitWorkspaceEnv, prepareGitWorkspace, pushGitWorkspace } from '../git/git-workspace.ts';
import type { GitWorkspace } from '../git/git-workspace.ts';
import { checkSkipWhen, scopeBaseline } from '../executors/evidence/scope-guard.ts';
import { settleEpisode } from '../executors/evidence/settle.ts';
import { snapshotReview } from '../executors/evidence/review.ts';
import { snapshotWorkspace } from '../executors/evidence/workspace.ts';
import { withPromptNote } from '../api/outputs.ts';
import { missingPodMount } from '../api/sandbox.ts';
import { encodeTerminationMessage } from '../api/termination-message.ts';

/** Exit code for a configuration the runner cannot use (like a CLI usage error). */
export const EXIT_BAD_CONFIG = 2;
// Time kept back from the agent for commit and push, so the work is saved before the pod's
// activeDeadlineSeconds (the same timeout) kills everything.
const MAX_SAVE_RESERVE_MS = 60_000;
// After SIGTERM the kubelet waits terminationGracePeriodSeconds (30 s by default) before SIGKILL.
const PUSH_TIMEOUT_WHEN_CANCELLED_MS = 15_000;

export interface EpisodeRunnerOptions {
  agentArgv: string[];
  /** Where the termination message goes (/dev/termination-log in a pod). */
  resultFile: string;
  /** Keep the agent's output here too; default: a temporary file, deleted afterwards. */
  logFile?: string;
  /** Normally process.env: the agent inherits it, so git credentials are deleted from it. */
  env: NodeJS.ProcessEnv;
  /** The agent's output is copied here live (the pod log). */
  stdout: NodeJS.WritableStream;
  /** The runner's own progress lines. */
  log: (line: string) => void;
  /** Aborted on SIGTERM: the agent is stopped and the result says cancelled. */
  signal?: AbortSignal;
}

export interface EpisodeRunnerOutcome {
  result: EpisodeResult;
  /** The process exit code: the agent's, 1 when it has none, EXIT_BAD_CONFIG for a bad config. */
  exitCode: number;
}

export async function runEpisode(opts: EpisodeRunnerOptions): Promise<EpisodeRunnerOutcome> {
  const startedAt = Date.now();
  // Before anything else, so no code path can hand the credentials to the agent.
  const credentials = takeGitCredentials(opts.env);
  const parsed = readEpisodeConfig(opts.env);
  if (!parsed.ok) {
    opts.log(parsed.message);
    return finish(opts, fatal(parsed.message, startedAt), EXIT_BAD_CONFIG);
  }
  try {
    return await runConfiguredEpisode(opts, parsed.value, credentials, startedAt);
  } catch (err) {
    // A bug or an unusable workspace directory: still a result, so the controller learns why.
    const message = redact(`episode runner failed: ${(err as Error).message ?? String(err)}`, [credentials?.token]);
    opts.log(message);
    return finish(opts, fatal(message, startedAt));
  }
}

async function runConfiguredEpisode(
  opts: EpisodeRunnerOptions,
  config: RunnerConfig,
  credentials: GitCredentials | undefined,
  startedAt: number,
): Promise<EpisodeRunnerOutcome> {
  const timeoutMs = config.timeoutSeconds * 1000;
  const where = `${config.namespace}/${config.task} episode ${config.episode}`;
  opts.log(`${where} of ${config.maxEpisodes} starting: ${JSON.stringify(opts.agentArgv)}`);

  const git: GitWorkspace | undefined = config.git && {
    url: config.git.url,
    ref: config.git.ref,
    from: config.git.from,
    dir: config.workspaceDir,
    credentials,
    log: opts.log,
  };
  if (git) {
    const prepared = await prepareGitWorkspace(git);
    if (!prepared.ok) return finish(opts, failed(prepared.errorClass, prepared.message, startedAt));
  } else {
    await mkdir(config.workspaceDir, { recursive: true });
  }
  // spec.sandbox.mounts: the agent is promised these paths of the image; without one it does not start.
  const missing = missingPodMount(config.sandboxMounts ?? [], existsSync);
  if (missing) {
    opts.log(missing);
    return finish(opts, fatal(missing, startedAt), EXIT_BAD_CONFIG);
  }
  const prompt = await readPrompt(config, opts.env);
  if (!prompt.ok) {
    opts.log(prompt.message);
    return finish(opts, fatal(prompt.message, startedAt), EXIT_BAD_CONFIG);
  }
  if (opts.signal?.aborted)
    return finish(opts, episodeResult({ exitCode: null, cancelled: true, message: 'cancelled' }));

  if (config.codexGateway) await writeCodexGatewayHome(config.codexGateway);
  const reserveMs = git ? Math.min(MAX_SAVE_RESERVE_MS, timeoutMs / 10) : 0;
  const agentTimeoutMs = Math.max(1000, startedAt + timeoutMs - reserveMs - Date.now());
  // Evidence as locally: the workspace before and after the agent (before our own commit and push).
  // skipWhen and scope (scope-guard.ts): checked here, where the workspace is, as a local executor does.
  const skip = checkSkipWhen(config.workspaceDir, config.skipWhen);
  if (skip) return finish(opts, episodeResult({ exitCode: null, skipped: { reason: 'SkipWhen' }, message: skip }), 0);
  const before = await snapshotWorkspace(config.workspaceDir);
  const scoped = config.scope ? await scopeBaseline(config.workspaceDir) : undefined;
  const reviewBefore = snapshotReview(config.workspaceDir);
  const ended = withPromptNote(await runAgent(opts, config, prompt.value, agentTimeoutMs), prompt.note);
  // A checkpoint of any git workspace the episode changed (a clone, or a volume holding a repository).
  const checkpoint = await settleEpisode(
    {
      workspace: config.workspaceDir,
      namespace: config.namespace,
      task: config.task,
      episode: config.episode,
      completion: config.completion,
      before,
      checklist: config.checklist,
      reviewBefore,
      scope: { scope: config.scope, allowed: config.scopeAllowed ?? [], baseline: scoped },
      gitEnv: git ? gitWorkspaceEnv(git) : undefined,
    },
    ended,
  );
  let result = checkpoint.result;
  if (result.scope) opts.log(`scope: ${result.scope.count} path(s) outside scope.paths (${result.scope.onViolation})`);
  if (checkpoint.error) opts.log(redact(checkpoint.error, [credentials?.token]));
  if (checkpoint.result.evidence?.workspace?.commit)
    opts.log(`checkpoint ${checkpoint.result.evidence.workspace.commit.slice(0, 12)}`);
  if (git) {
    const cancelled = result.cancelled || opts.signal?.aborted === true;
    const pushed = await pushGitWorkspace(git, {
      pushTimeoutMs: cancelled ? PUSH_TIMEOUT_WHEN_CANCELLED_MS : undefined,
    });
    // Unsaved work is lost work (the pod's clone goes with it): retry the episode, unless it already
    // failed for a weightier reason.
    const saved = checkpoint.error
      ? { ok: false as const, errorClass: 'transient' as const, message: checkpoint.error }
      : pushed;
    if (!saved.ok && result.errorClass === 'none') {
      result = episodeResult({
        ...result,
        errorClass: saved.errorClass,
        message: redact(saved.message, [credentials?.token]),
      });
    }
  }
  return finish(opts, result);
}

async function runAgent(
  opts: EpisodeRunnerOptions,
  config: RunnerConfig,
  prompt: string,
  timeoutMs: number,
): Promise<EpisodeResult> {
  const tempDir = opts.logFile ? undefined : await mkdtemp(path.join(os.tmpdir(), 'episodic-episode-'));
  // promptVia=file puts the prompt next to the log: outside the workspace, so it is never committed.
  const logFile = opts.logFile ?? path.join(tempDir as string, `episode-${config.episode}.log`);
  const follower = followFile(logFile, opts.stdout, await sizeOf(logFile));
  try {
    const running = await startProcessEpisode({
      namespace: config.namespace,
      name: config.task,
      episode: config.episode,
      maxEpisodes: config.maxEpisodes,
      argv: opts.agentArgv,
      promptVia: config.promptVia,
      prompt,
      cwd: config.workspaceDir,
      timeoutMs,
      logFile,
      verify: config.completion.verify,
      onExitZero: config.completion.onExitZero,
      gates: config.gates,
      fixEpisode: config.gate !== undefined,
      ...checklistRule(config.checklist, config.completion),
      exitNote: false,
      analyzer: analyzerOptions(config, config.completion),
    });
    const cancel = () => running.cancel();
    opts.signal?.addEventListener('abort', cancel, { once: true });
    try {
      return await running.result;
    } finally {
      opts.signal?.removeEventListener('abort', cancel);
    }
  } finally {
    await follower.stop();
    if (tempDir) await rm(tempDir, { recursive: true, force: true });
  }
}

async function finish(
  opts: EpisodeRunnerOptions,
  result: EpisodeResult,
  exitCode?: number,
): Promise<EpisodeRunnerOutcome> {
  try {
    await writeFile(opts.resultFile, encodeTerminationMessage(result));
  } catch (err) {
    opts.log(`cannot write the result to ${opts.resultFile}: ${(err as Error).message}`);
  }
  opts.log(`episode finished: ${summary(result)}`);
  return { result, exitCode: exitCode ?? processExitCode(result.exitCode) };
}

function processExitCode(code: number | null): number {
  return code !== null && Number.isInteger(code) && code >= 0 && code <= 255 ? code : 1;
}

function summary(r: EpisodeResult): string {
  const parts = [`exit ${r.exitCode ?? (r.signal ? r.signal : 'none')}`];
  if (r.errorClass !== 'none') parts.push(r.errorClass);
  if (r.timedOut) parts.push('timed out');
  if (r.cancelled) parts.push('cancelled');
  if (r.completion) parts.push(`completion ${r.completion}`);
  // Four decimals would show a cheap episode as $0.0000: below that, two significant digits.
  if (r.costUSD > 0) parts.push(`$${r.costUSD >= 0.0001 ? r.costUSD.toFixed(4) : r.costUSD.toPrecision(2)}`);
  if (r.message) parts.push(JSON.stringify(clip(r.message, 200)));
  return parts.join(', ');
}

async function sizeOf(file: string): Promise<number> {
  return stat(file).then(
    (s) => s.size,
    () => 0,
  );
}

function fatal(message: string, startedAt: number): EpisodeResult {
  return failed('fatal', message, startedAt);
}

function failed(errorClass: ErrorClass, message: string, startedAt: number): EpisodeResult {
  return episodeResult({ exitCode: null, errorClass, message, durationMs: Date.now() - startedAt });
}
