// An episode's processes ended: what their exits and the agent's output make of its EpisodeResult (verify's
// note, the message, a setup failure, a bug of ours), and the claim facts the reconciler's completion rule reads.
import { clip, LINE_MAX } from '../../api/bounds.ts';
import { episodeResult } from '../../api/episode-result.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { checklistMeetsCompletion } from '../../reconciler/completion.ts';
import type { ClaimFacts, ClaimRules } from '../../reconciler/outcome.ts';
import { readWorkspaceChecklist } from '../evidence/checklist.ts';
import { createOutputAnalyzer } from '../output/index.ts';
import { stripAnsi } from '../output/rules.ts';
import type { OutputAnalysis, ProcessExit } from '../output/types.ts';
import { errorCode, errorText } from './agent-process.ts';
import type { ProcessEnd } from './agent-process.ts';
import type { ProcessEpisodeRequest, RunningEpisode } from './episode-request.ts';

export interface VerifyOutcome {
  exitCode: number | null;
  /** Set when verify did not pass. */
  note?: string;
}

/** A failed verify's message ends with its last stderr line (where a check says why), else its last stdout line. */
export function describeVerify(
  exit: ProcessEnd,
  stderrTail: string,
  stdoutTail: string,
  timeoutMs: number,
): VerifyOutcome {
  if (exit.spawnErrorMessage) return { exitCode: null, note: `verify failed: ${exit.spawnErrorMessage}` };
  if (exit.timedOut) return { exitCode: null, note: `verify timed out after ${seconds(timeoutMs)}` };
  if (exit.cancelled) return { exitCode: exit.exitCode, note: 'verify cancelled' };
  if (exit.exitCode === 0) return { exitCode: 0 };
  const how = exit.exitCode === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited ${exit.exitCode}`;
  const last = lastLine(stderrTail) || lastLine(stdoutTail);
  return { exitCode: exit.exitCode, note: `verify ${how}${last ? `: ${last}` : ''}` };
}

/** The completion rule met by the plan file alone (read after the agent, before the gates). */
export function checklistMet(req: ProcessEpisodeRequest): boolean {
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

export function buildResult(o: {
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
export function notStarted(req: ProcessEpisodeRequest, startedAt: number, err: unknown): RunningEpisode {
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
export function internalError(err: unknown, startedAt: number): EpisodeResult {
  return episodeResult({
    exitCode: null,
    errorClass: 'fatal',
    message: `episodic internal error: ${errorText(err)}`,
    durationMs: Date.now() - startedAt,
  });
}

export function lastLine(text: string): string {
  const plain = stripAnsi(text);
  const lines = plain.split(/\r?\n/).map((l) => l.trim());
  return clip(lines.filter((l) => l.length > 0).pop() ?? '', LINE_MAX);
}

export function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}
