// One episode as local processes: a fresh agent in the workspace, then (if it claims to be done) the verify
// command; the local controller and the runner in an episode pod both start every process here. Each one
// gets its argv without a shell, leads its own process group, carries the episode's marker in its
// environment, and writes its output into spool files that the log and the analyzer follow; on timeout,
// cancel or exit its whole tree is killed. Produces the EpisodeResult facts; the reconciler decides what they mean.
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, parse, resolve } from 'node:path';
import { clip, LINE_MAX } from '../../api/bounds.ts';
import { episodeResult } from '../../api/episode-result.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { rewriteInPlace } from '../../util/fs.ts';
import { EpisodeLog, exitNote, spoolFiles } from './episode-log.ts';
import type { OutputListener } from './episode-log.ts';
import { checklistMeetsCompletion } from '../../reconciler/completion.ts';
import { completionClaim } from '../../reconciler/outcome.ts';
import { readWorkspaceChecklist } from '../evidence/checklist.ts';
import type { ClaimFacts, ClaimRules } from '../../reconciler/outcome.ts';
import { createOutputAnalyzer } from '../output/index.ts';
import { createByteTail } from '../output/byte-tail.ts';
import type { AnalyzerOptions, OutputAnalysis, OutputAnalyzer, ProcessExit } from '../output/types.ts';
import { TREE_MARKER_ENV } from './process-tree.ts';
import type { Gate, GateRun } from '../../api/gates.ts';
import { runGates } from './gates.ts';
import { OUTPUTS_ENV } from '../../api/outputs.ts';
import { clearOutputsFile, episodeOutputs, outputsFileFor } from './outputs-file.ts';
import { errorCode, errorText, noRoomOn, startProcess } from './agent-process.ts';
import type { ProcessEnd } from './agent-process.ts';
import { OPS_ENV, opsFilePath, prepareOpsFile, withOpsFrom } from './ops-file.ts';
import type { SandboxResources } from '../../api/sandbox.ts';
import { limitMessage, watchLimits } from '../sandbox/episode-sandbox.ts';
import type { EpisodeSandbox } from '../sandbox/episode-sandbox.ts';

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
  /**
   * Write how the agent exited into the log (default true), for a controller restarted before it records the
   * end. The in-pod runner says it in the termination message instead and keeps the pod log the agent's own.
   */
  exitNote?: boolean;
  analyzer: AnalyzerOptions;
  /** spec.steps[].gates of the episode's step: run after a completion claim that verify (if any) confirmed. */
  gates?: Gate[];
  /** A fix episode (status.steps[].gate): the gates run after any clean exit, claim or not. */
  fixEpisode?: boolean;
  /**
   * spec.progress.checklist (in cwd) and spec.completion.checklist: a clean exit that leaves the plan complete
   * meets the completion rule without a claim, so the gates run after it too (checklistMeetsCompletion).
   */
  checklist?: { file: string; completes: boolean };
  /**
   * Where the prompt is written for promptVia stdin/file: a scratch file reused by every episode of the
   * task (rewritten in place, see rewriteInPlace in util/fs.ts). Default: episode-N.prompt.md by the log.
   */
  promptFile?: string;
  /** spec.sandbox (local): every process of the episode runs wrapped in bubblewrap (sandbox/episode-sandbox.ts). */
  sandbox?: EpisodeSandbox;
  /** spec.sandbox.resources, for the message of a bound hit. */
  sandboxResources?: SandboxResources;
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
  /** Never rejects; the log is complete when it resolves. */
  result: Promise<EpisodeResult>;
  /**
   * Kill the whole process tree (agent or verify); the result then says cancelled (and `why`, in the log
   * and the message). No-op once finished.
   */
  cancel(why?: string): void;
}

const DEFAULT_KILL_GRACE_MS = 5000;
// Verify gets the rest of the episode's time, but never less than this: a slow test suite after a long
// episode should not fail just because the agent used most of its budget.
const MIN_VERIFY_TIMEOUT_MS = 60_000;

/** Resolves once the agent runs (or could not be started: then `result` says why). */
/** Where each process's argv comes from in the spec, for "cannot start" messages. */
const COMMAND_FIELDS = {
  agent: 'spec.agent.command',
  verify: 'spec.completion.verify',
  gate: "the gate's check or fix (spec.steps[].gates[])",
} as const;

export async function startProcessEpisode(req: ProcessEpisodeRequest): Promise<RunningEpisode> {
  const startedAt = Date.now();
  const killGraceMs = req.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const marker = req.marker ?? randomUUID();
  let env: Record<string, string>;
  let stdinFile: string | undefined;
  let analyzer: OutputAnalyzer;
  const opsFile = opsFilePath(req.logFile);
  const outputsFile = outputsFileFor(resolve(req.logFile));
  try {
    analyzer = createOutputAnalyzer({ ...req.analyzer, prompt: req.prompt, command: req.argv });
    mkdirSync(dirname(req.logFile), { recursive: true });
    await prepareOpsFile(opsFile);
    const promptFile = req.promptVia === 'argument' ? undefined : writePromptFile(req);
    // After spec.agent.env: where ops and outputs go is ours to say, not the spec's.
    env = {
      ...episodeEnv(req, promptFile),
      [TREE_MARKER_ENV]: marker,
      [OPS_ENV]: opsFile,
      [OUTPUTS_ENV]: outputsFile,
    };
    stdinFile = req.promptVia === 'stdin' ? promptFile : undefined;
  } catch (err) {
    return notStarted(req, startedAt, err);
  }
  await clearOutputsFile(outputsFile).catch(() => undefined);
  // Loaded on first use: the CLI's other commands never start a process.
  const { execa } = await import('execa');
  const log = new EpisodeLog(req.logFile);
  const start = (
    role: 'agent' | 'verify' | 'gate',
    argv: string[],
    stdin: string | undefined,
    timeoutMs: number,
    onOutput: OutputListener,
  ) => {
    const wrapped = req.sandbox?.wrap(argv, env);
    return startProcess(execa, wrapped?.argv ?? argv, {
      cwd: req.cwd,
      env: wrapped?.env ?? env,
      extendEnv: !wrapped,
      stdinFile: stdin,
      timeoutMs,
      killGraceMs,
      marker,
      log,
      spool: spoolFiles(req.logFile, role),
      onOutput,
      field: COMMAND_FIELDS[role],
    });
  };

  const argv = req.promptVia === 'argument' ? [...req.argv, req.prompt] : req.argv;
  let current = start('agent', argv, stdinFile, req.timeoutMs, (chunk, stream) => analyzer.write(chunk, stream));
  let cancelled = false;
  let cancelWhy: string | undefined;
  let finished = false;
  const unwatch = req.sandbox ? watchLimits(req.sandbox, () => current.stop()) : () => undefined;

  const run = async (): Promise<EpisodeResult> => {
    const exit = await current.exit;
    if (exit.spawnErrorMessage) log.note(`\n--- episodic: ${exit.spawnErrorMessage} ---\n`);
    // How the agent ended, for a controller restarted before this one records it (see episode-log-recovery.ts).
    else if (req.exitNote !== false) log.note(`\n${exitNote(exit)}\n`);
    if (exit.timedOut) log.note(`\n--- episodic: timed out after ${seconds(req.timeoutMs)}; process tree killed ---\n`);
    if (exit.cancelled)
      log.note(`\n--- episodic: cancelled${cancelWhy ? ` (${cancelWhy})` : ''}; process tree killed ---\n`);
    await current.release(); // the agent's output and how it ended are in the log now
    const analysis = analyzer.finish(exit);

    let verify: VerifyOutcome | undefined;
    const claimsDone = completionClaim(claimFacts(exit, analysis), claimRules(req)) !== undefined;
    if (claimsDone && req.verify && req.verify.length > 0 && !cancelled && !exit.timedOut) {
      const verifyTimeoutMs = Math.max(req.timeoutMs - (Date.now() - startedAt), MIN_VERIFY_TIMEOUT_MS);
      // One tail per stream, for the last line in the message: the pipes' chunks arrive in no fixed order.
      const tails = { stdout: createByteTail(4096), stderr: createByteTail(4096) };
      log.note(`\n--- episodic: verify ${JSON.stringify(req.verify)} ---\n`);
      current = start('verify', req.verify, undefined, verifyTimeoutMs, (chunk, stream) => tails[stream].push(chunk));
      verify = describeVerify(await current.exit, tails.stderr.text(), tails.stdout.text(), verifyTimeoutMs);
      log.note(`\n--- episodic: ${verify.note ?? 'verify passed'} ---\n`); // on a line of its own, whatever verify printed last
      await current.release();
    }
    let gates: GateRun[] | undefined;
    const cleanExit = exit.exitCode === 0 && !analysis.agentError && !cancelled && !exit.timedOut;
    const claimed = claimsDone && (!verify || verify.exitCode === 0);
    const confirmed = cleanExit && (req.fixEpisode || claimed || (!claimsDone && checklistMet(req)));
    if (confirmed && req.gates && req.gates.length > 0) {
      gates = await runGates(req.gates, {
        run: async (gateArgv, timeoutMs, onOutput) => {
          current = start('gate', gateArgv, undefined, timeoutMs, onOutput);
          const end = await current.exit;
          await current.release();
          return end;
        },
        note: (text) => log.note(`\n--- episodic: ${text} ---\n`),
        cancelled: () => cancelled,
      });
    }
    const noRoom = exit.exitCode === 0 ? undefined : (log.noRoom ?? noRoomOn(dirname(req.logFile)));
    const durationMs = Date.now() - startedAt;
    const built = buildResult({ req, exit, analysis, verify, cancelled, cancelWhy, noRoom, durationMs });
    const published = await episodeOutputs(analysis.outputs, outputsFile);
    return withSandbox({ ...(gates ? { ...built, gates } : built), ...published }, req, log, unwatch);
  };

  const result = run()
    .catch(async (err: unknown) => {
      unwatch();
      await req.sandbox?.close().catch(() => []); // its sockets and group, after a bug of ours too
      return internalError(err, startedAt);
    })
    .then(async (r) => {
      await current.release(); // after an internal error too
      await log.close();
      return withOpsFrom(r, opsFile); // whatever the outcome: the agent asked for them
    })
    .finally(() => {
      finished = true;
    });
  return {
    pid: current.pid,
    pidStartTime: current.pidStartTime,
    result,
    cancel(why) {
      // Nothing to cancel once finished, or when the agent never started (the result already says why).
      if (finished || cancelled || current.pid === undefined) return;
      cancelled = true;
      cancelWhy = why;
      current.cancel();
    },
  };
}

/** The sandbox's part of the result: how it confined the episode, a bound it hit, what its proxy refused. */
async function withSandbox(
  r: EpisodeResult,
  req: ProcessEpisodeRequest,
  log: EpisodeLog,
  unwatch: () => void,
): Promise<EpisodeResult> {
  unwatch();
  if (!req.sandbox) return r;
  const refused = await req.sandbox.close();
  for (const why of refused.slice(0, 20)) log.note(`\n--- episodic: sandbox proxy refused: ${why} ---\n`);
  const run = req.sandbox.run();
  if (!run.limitHit) return { ...r, sandbox: run };
  const message = limitMessage(run.limitHit, req.sandboxResources ?? {});
  log.note(`\n--- episodic: ${message} ---\n`);
  return { ...r, sandbox: run, message };
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

interface VerifyOutcome {
  exitCode: number | null;
  /** Set when verify did not pass. */
  note?: string;
}

/** A failed verify's message ends with its last stderr line (where a check says why), else its last stdout line. */
function describeVerify(exit: ProcessEnd, stderrTail: string, stdoutTail: string, timeoutMs: number): VerifyOutcome {
  if (exit.spawnErrorMessage) return { exitCode: null, note: `verify failed: ${exit.spawnErrorMessage}` };
  if (exit.timedOut) return { exitCode: null, note: `verify timed out after ${seconds(timeoutMs)}` };
  if (exit.cancelled) return { exitCode: exit.exitCode, note: 'verify cancelled' };
  if (exit.exitCode === 0) return { exitCode: 0 };
  const how = exit.exitCode === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited ${exit.exitCode}`;
  const last = lastLine(stderrTail) || lastLine(stdoutTail);
  return { exitCode: exit.exitCode, note: `verify ${how}${last ? `: ${last}` : ''}` };
}

/** The request's `checklist`: spec.progress.checklist, and whether it completes the step (completion.checklist). */
export function checklistRule(
  file: string | undefined,
  completion: { checklist: boolean },
): Pick<ProcessEpisodeRequest, 'checklist'> {
  return file ? { checklist: { file, completes: completion.checklist } } : {};
}

/** The completion rule met by the plan file alone (read after the agent, before the gates). */
function checklistMet(req: ProcessEpisodeRequest): boolean {
  const c = req.checklist;
  return !!c && checklistMeetsCompletion({ checklist: c.completes }, readWorkspaceChecklist(req.cwd, c.file));
}

/** What the agent's end says about completion, before verify runs. */
export function claimFacts(exit: ProcessExit, analysis: OutputAnalysis): ClaimFacts {
  return {
    exitCode: exit.exitCode,
    agentError: analysis.agentError,
    completion: analysis.completion,
    evidence: { ralph: analysis.ralph, completionKeywords: analysis.keywords },
  };
}

export function claimRules(req: Pick<ProcessEpisodeRequest, 'onExitZero' | 'analyzer'>): ClaimRules {
  return { onExitZero: req.onExitZero, signals: req.analyzer.signals === true };
}

function buildResult(o: {
  req: ProcessEpisodeRequest;
  exit: ProcessEnd;
  analysis: OutputAnalysis;
  verify?: VerifyOutcome;
  cancelled: boolean;
  cancelWhy?: string;
  /** The log, or the disk, had no room left: a failed agent likely failed writing its output there. */
  noRoom?: string;
  durationMs: number;
}): EpisodeResult {
  const { req, exit, analysis, verify } = o;
  let message = analysis.message ?? exit.spawnErrorMessage;
  let errorClass = analysis.errorClass;
  if (exit.timedOut) message = `timed out after ${seconds(req.timeoutMs)}`;
  else if (o.cancelled) message = o.cancelWhy ? `cancelled: ${o.cancelWhy}` : 'cancelled';
  else if (verify?.note) message = verify.note;
  else if (o.noRoom && exit.exitCode !== 0) {
    errorClass = 'transient'; // not the agent's failure: its output had no room on the state disk
    message = `no room on the state disk for the agent's output (${o.noRoom})`;
  }
  return episodeResult({
    exitCode: exit.exitCode,
    ...(exit.signal ? { signal: exit.signal } : {}),
    timedOut: exit.timedOut,
    cancelled: o.cancelled,
    format: analysis.format,
    agentError: analysis.agentError,
    errorClass,
    ...(analysis.resetAt ? { resetAt: analysis.resetAt } : {}),
    ...(analysis.completion ? { completion: analysis.completion } : {}),
    costUSD: analysis.costUSD,
    tokens: analysis.tokens,
    ...(analysis.ralph || analysis.keywords
      ? { evidence: { ralph: analysis.ralph, completionKeywords: analysis.keywords } }
      : {}),
    ...(verify ? { verifyExitCode: verify.exitCode } : {}),
    ...(message ? { message } : {}),
    durationMs: o.durationMs,
  });
}

/** Setup failed before anything ran (e.g. the log directory cannot be created): a fatal, not a throw. */
function notStarted(req: ProcessEpisodeRequest, startedAt: number, err: unknown): RunningEpisode {
  const text = `cannot prepare episode: ${errorText(err)}`;
  const result = Promise.resolve().then(() => {
    const analysis = createOutputAnalyzer(req.analyzer).finish({
      exitCode: null,
      spawnErrorCode: errorCode(err, 'ESETUP'),
      spawnErrorMessage: text,
    });
    return episodeResult({
      exitCode: null,
      format: analysis.format,
      agentError: analysis.agentError,
      errorClass: analysis.errorClass,
      message: analysis.message ?? text,
      durationMs: Date.now() - startedAt,
    });
  });
  return { pid: undefined, result: result.catch((e: unknown) => internalError(e, startedAt)), cancel() {} };
}

/** A bug of ours (analyzer threw, result did not validate): still a result, never a rejection. */
function internalError(err: unknown, startedAt: number): EpisodeResult {
  return episodeResult({
    exitCode: null,
    errorClass: 'fatal',
    message: `episodic internal error: ${errorText(err)}`,
    durationMs: Date.now() - startedAt,
  });
}

function lastLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
  const lines = plain.split(/\r?\n/).map((l) => l.trim());
  return clip(lines.filter((l) => l.length > 0).pop() ?? '', LINE_MAX);
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}
