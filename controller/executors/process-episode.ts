// Local mode: one episode = one fresh agent process in the workspace, then (if it claims to be done) the
// verify command. Produces the EpisodeResult facts; the reconciler decides what they mean.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, parse, resolve } from 'node:path';
import { episodeResult } from '../api/episode-result.ts';
import { rewriteInPlace } from '../util/fs.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { createOutputAnalyzer } from './output/index.ts';
import { createByteTail } from './output/byte-tail.ts';
import type { AnalyzerOptions, OutputAnalysis, OutputAnalyzer, ProcessExit } from './output/types.ts';
import type { SpawnHelper } from './spawn-helper.ts';
import { startTrackedProcess } from './tracked-process.ts';
import type { TrackedExit, TrackedProcess } from './tracked-process.ts';

export type PromptVia = 'stdin' | 'argument' | 'file';

export interface ProcessEpisodeRequest {
  namespace: string;
  name: string;
  /** 1-based. */
  episode: number;
  maxEpisodes: number;
  /** spec.agent.command: an argv array, never run through a shell. */
  argv: string[];
  promptVia: PromptVia;
  /** The rendered prompt text. */
  prompt: string;
  /** Extra environment (spec.agent.env, resolved); added on top of process.env and the EPISODIC_* vars. */
  env?: Record<string, string>;
  /** The workspace directory; must exist. */
  cwd: string;
  timeoutMs: number;
  /** SIGTERM → SIGKILL delay. Default 5000. */
  killGraceMs?: number;
  /** Output of the agent (and verify) is appended here; parent directories are created. */
  logFile: string;
  /** Run in cwd after a completion signal; exit 0 confirms it. */
  verify?: string[];
  /** Exit code 0 alone counts as a completion claim (so verify runs after it). */
  onExitZero: boolean;
  analyzer: AnalyzerOptions;
  /** Start processes through this helper (the local controller's default); directly without it. */
  helper?: SpawnHelper;
  /** See LaunchOptions.stderrFile: a scratch file reused by every episode of the task. */
  stderrFile?: string;
  /**
   * Where the prompt is written for promptVia stdin/file: a scratch file reused by every episode of the
   * task (rewritten in place, see rewriteInPlace in util/fs.ts). Default: episode-N.prompt.md by the log.
   */
  promptFile?: string;
  /** Hold the agent just before exec until release() (through the helper only; see LaunchOptions.hold). */
  hold?: boolean;
  /**
   * TREE_MARKER_ENV of every process of the episode, agent and verify (default: a new random one): what a
   * restarted controller looks for to kill what a crashed one left running.
   */
  marker?: string;
}

export interface RunningEpisode {
  /** Process group leader; undefined when the command could not be started. */
  pid: number | undefined;
  /** /proc start time of pid, to recognise the same process after a controller restart (Linux only). */
  pidStartTime?: string;
  /** Never rejects. */
  result: Promise<EpisodeResult>;
  /** Kill the whole process tree (agent or verify); the result then says cancelled. No-op once finished. */
  cancel(): void;
  /** Lets a held agent exec (request.hold); a no-op otherwise. */
  release(): void;
}

const DEFAULT_KILL_GRACE_MS = 5000;
// Verify gets the rest of the episode's time, but never less than this: a slow test suite after a long
// episode should not fail just because the agent used most of its budget.
const MIN_VERIFY_TIMEOUT_MS = 60_000;
const MESSAGE_MAX = 1000;

/** Resolves once the agent runs (or could not be started: then `result` says why). */
export async function startProcessEpisode(req: ProcessEpisodeRequest): Promise<RunningEpisode> {
  const startedAt = Date.now();
  const killGraceMs = req.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  let env: Record<string, string>;
  let analyzer: OutputAnalyzer;
  let stdinFile: string | undefined;
  try {
    analyzer = createOutputAnalyzer(req.analyzer);
    mkdirSync(dirname(req.logFile), { recursive: true });
    const promptFile = req.promptVia === 'argument' ? undefined : writePromptFile(req);
    env = episodeEnv(req, promptFile);
    stdinFile = req.promptVia === 'stdin' ? promptFile : undefined;
  } catch (err) {
    return notStarted(req, startedAt, err);
  }
  // Notes of ours between the agent's output; a broken log must not fail the episode.
  const note = (text: string) => {
    try {
      appendFileSync(req.logFile, text);
    } catch {
      // the analysis does not depend on the log
    }
  };

  const argv = req.promptVia === 'argument' ? [...req.argv, req.prompt] : req.argv;
  let current: TrackedProcess = await startTrackedProcess({
    argv,
    cwd: req.cwd,
    env,
    stdinFile,
    logFile: req.logFile,
    onOutput: (chunk, stream) => analyzer.write(chunk, stream),
    timeoutMs: req.timeoutMs,
    killGraceMs,
    helper: req.helper,
    stderrFile: req.stderrFile,
    hold: req.hold,
    marker: req.marker,
  });
  const agent = current;
  let cancelled = false;
  let finished = false;

  const run = async (): Promise<EpisodeResult> => {
    const exit = await current.exit;
    if (exit.spawnErrorMessage) note(`\n--- episodic: ${exit.spawnErrorMessage} ---\n`);
    if (exit.timedOut) note(`\n--- episodic: timed out after ${seconds(req.timeoutMs)}; process tree killed ---\n`);
    if (exit.cancelled) note('\n--- episodic: cancelled; process tree killed ---\n');
    const analysis = analyzer.finish(processExit(exit));

    let verify: VerifyOutcome | undefined;
    const claimsDone =
      exit.exitCode === 0 && !analysis.agentError && (analysis.completion !== undefined || req.onExitZero);
    if (claimsDone && req.verify && req.verify.length > 0 && !cancelled && !exit.timedOut) {
      const verifyTimeoutMs = Math.max(req.timeoutMs - (Date.now() - startedAt), MIN_VERIFY_TIMEOUT_MS);
      const tail = createByteTail(4096); // for the last line of its output in the message
      note(`\n--- episodic: verify ${JSON.stringify(req.verify)} ---\n`);
      current = await startTrackedProcess({
        argv: req.verify,
        cwd: req.cwd,
        env,
        logFile: req.logFile,
        onOutput: (chunk) => tail.push(chunk),
        timeoutMs: verifyTimeoutMs,
        killGraceMs,
        helper: req.helper,
        stderrFile: req.stderrFile,
        marker: req.marker,
      });
      verify = describeVerify(await current.exit, tail.text(), verifyTimeoutMs);
      note(`--- episodic: ${verify.note ?? 'verify passed'} ---\n`);
    }
    return buildResult({ req, exit, analysis, verify, cancelled, durationMs: Date.now() - startedAt });
  };

  const result = run()
    .catch((err: unknown) => internalError(err, startedAt))
    .finally(() => {
      finished = true;
    });
  return {
    pid: current.pid,
    pidStartTime: current.pidStartTime,
    result,
    cancel() {
      // Nothing to cancel once finished, or when the agent never started (the result already says why).
      if (finished || cancelled || current.pid === undefined) return;
      cancelled = true;
      current.cancel();
    },
    release: () => agent.release(),
  };
}

/** Next to the log, not in the workspace: the agent must not commit it or mistake it for project files. */
function writePromptFile(req: ProcessEpisodeRequest): string {
  const { dir, name } = parse(resolve(req.logFile));
  if (req.promptFile) {
    rewriteInPlace(req.promptFile, req.prompt); // the task's scratch file: one episode (and reader) at a time
    return req.promptFile;
  }
  const promptFile = join(dir, `${name}.prompt.md`);
  writeFileSync(promptFile, req.prompt, { mode: 0o600 });
  return promptFile;
}

function episodeEnv(req: ProcessEpisodeRequest, promptFile: string | undefined): Record<string, string> {
  const env: Record<string, string> = {
    EPISODIC_TASK: req.name,
    EPISODIC_NAMESPACE: req.namespace,
    EPISODIC_EPISODE: String(req.episode),
    EPISODIC_MAX_EPISODES: String(req.maxEpisodes),
  };
  if (req.promptVia === 'file' && promptFile) env.EPISODIC_PROMPT_FILE = promptFile;
  return { ...env, ...req.env };
}

function processExit(exit: TrackedExit): ProcessExit {
  return {
    exitCode: exit.exitCode,
    ...(exit.signal ? { signal: exit.signal } : {}),
    ...(exit.spawnErrorCode ? { spawnErrorCode: exit.spawnErrorCode } : {}),
    ...(exit.spawnErrorMessage ? { spawnErrorMessage: exit.spawnErrorMessage } : {}),
  };
}

interface VerifyOutcome {
  exitCode: number | null;
  /** Set when verify did not pass. */
  note?: string;
}

function describeVerify(exit: TrackedExit, outputTail: string, timeoutMs: number): VerifyOutcome {
  if (exit.spawnErrorMessage) return { exitCode: null, note: `verify failed: ${exit.spawnErrorMessage}` };
  if (exit.timedOut) return { exitCode: null, note: `verify timed out after ${seconds(timeoutMs)}` };
  if (exit.cancelled) return { exitCode: exit.exitCode, note: 'verify cancelled' };
  if (exit.exitCode === 0) return { exitCode: 0 };
  const how = exit.exitCode === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited ${exit.exitCode}`;
  const last = lastLine(outputTail);
  return { exitCode: exit.exitCode, note: `verify ${how}${last ? `: ${last}` : ''}` };
}

function buildResult(o: {
  req: ProcessEpisodeRequest;
  exit: TrackedExit;
  analysis: OutputAnalysis;
  verify?: VerifyOutcome;
  cancelled: boolean;
  durationMs: number;
}): EpisodeResult {
  const { req, exit, analysis, verify } = o;
  let message = analysis.message ?? exit.spawnErrorMessage;
  if (exit.timedOut) message = `timed out after ${seconds(req.timeoutMs)}`;
  else if (o.cancelled) message = 'cancelled';
  else if (verify?.note) message = verify.note;
  return episodeResult({
    exitCode: exit.exitCode,
    ...(exit.signal ? { signal: exit.signal } : {}),
    timedOut: exit.timedOut,
    cancelled: o.cancelled,
    format: analysis.format,
    agentError: analysis.agentError,
    errorClass: analysis.errorClass,
    ...(analysis.resetAt ? { resetAt: analysis.resetAt } : {}),
    ...(analysis.completion ? { completion: analysis.completion } : {}),
    costUSD: analysis.costUSD,
    tokens: analysis.tokens,
    ...(verify ? { verifyExitCode: verify.exitCode } : {}),
    ...(message ? { message: clip(message, MESSAGE_MAX) } : {}),
    durationMs: o.durationMs,
  });
}

/** Setup failed before anything ran (e.g. the log directory cannot be created): a fatal, not a throw. */
function notStarted(req: ProcessEpisodeRequest, startedAt: number, err: unknown): RunningEpisode {
  const code = (err as { code?: unknown } | null)?.code;
  const text = err instanceof Error ? err.message : String(err);
  const result = Promise.resolve().then(() => {
    const analysis = createOutputAnalyzer(req.analyzer).finish({
      exitCode: null,
      spawnErrorCode: typeof code === 'string' ? code : 'ESETUP',
      spawnErrorMessage: `cannot prepare episode: ${text}`,
    });
    return episodeResult({
      exitCode: null,
      format: analysis.format,
      agentError: analysis.agentError,
      errorClass: analysis.errorClass,
      message: clip(analysis.message ?? `cannot prepare episode: ${text}`, MESSAGE_MAX),
      durationMs: Date.now() - startedAt,
    });
  });
  return { pid: undefined, result: result.catch((e: unknown) => internalError(e, startedAt)), cancel() {}, release() {} };
}

/** A bug of ours (analyzer threw, result did not validate): still a result, never a rejection. */
function internalError(err: unknown, startedAt: number): EpisodeResult {
  const text = err instanceof Error ? err.message : String(err);
  return episodeResult({
    exitCode: null,
    errorClass: 'fatal',
    message: clip(`episodic internal error: ${text}`, MESSAGE_MAX),
    durationMs: Date.now() - startedAt,
  });
}

function lastLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
  const lines = plain.split(/\r?\n/).map((l) => l.trim());
  return clip(lines.filter((l) => l.length > 0).pop() ?? '', 300);
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}
