// Turns the facts an executor reports into the one outcome the rules act on.
import type { AgentTaskSpec, Outcome } from '../api/agent-task.ts';
import type { EpisodeResult } from '../api/episode-result.ts';

export interface ClassifiedOutcome {
  outcome: Outcome;
  /** CamelCase reason for status and events. */
  reason: string;
}

/** What an episode's end says about completion: known to the executor as soon as the agent exits. */
export type ClaimFacts = Pick<EpisodeResult, 'exitCode' | 'completion' | 'evidence'> & { agentError?: boolean };

/** The completion rules of the spec that decide what counts as a claim. */
export interface ClaimRules {
  onExitZero: boolean;
  /** completion.signals is set. */
  signals: boolean;
}

/** A completion signal that finishes the task by itself, or `score`: signals that may add up to completion.signals' threshold. */
export type CompletionClaim = 'promise' | 'exitSignal' | 'exitZero' | 'score';

/**
 * Whether the agent claims the task done, and how: a clean exit with the promise or EXIT_SIGNAL, exit 0 under
 * onExitZero, or with completion.signals anything that may add up to a score (EXIT_SIGNAL, completion
 * keywords, a test-only episode). The executor runs verify after any claim; the outcome starts from it.
 */
export function completionClaim(end: ClaimFacts, rules: ClaimRules): CompletionClaim | undefined {
  if (end.exitCode !== 0 || end.agentError) return undefined;
  // With a score, EXIT_SIGNAL is one signal of it (+50), no longer enough by itself.
  const signal = rules.signals && end.completion === 'exitSignal' ? undefined : end.completion;
  if (signal) return signal;
  if (rules.onExitZero) return 'exitZero';
  if (!rules.signals) return undefined;
  const keywords = end.evidence?.completionKeywords?.length ?? 0;
  const testing = /^testing$/i.test(end.evidence?.ralph?.workType ?? '');
  return end.completion === 'exitSignal' || keywords > 0 || testing ? 'score' : undefined;
}

export function classifyOutcome(result: EpisodeResult, completion: AgentTaskSpec['completion']): ClassifiedOutcome {
  // Order matters: how the episode ended beats what it printed.
  if (result.cancelled) return { outcome: 'cancelled', reason: 'Cancelled' };
  if (result.interrupted) return { outcome: 'interrupted', reason: 'Interrupted' };
  if (result.timedOut) return { outcome: 'timeout', reason: 'EpisodeTimeout' };
  // The sandbox killed it for a bound of spec.sandbox.resources: whatever it printed after.
  if (result.sandbox?.limitHit) return { outcome: 'failed', reason: 'ResourceLimit' };
  if (result.errorClass === 'usageLimit') return { outcome: 'usageLimit', reason: 'UsageLimit' };
  if (result.errorClass === 'fatal') return { outcome: 'fatal', reason: 'FatalError' };
  if (result.errorClass === 'contextTooLong') {
    return { outcome: completion.contextTooLong === 'failed' ? 'failed' : 'fatal', reason: 'ContextTooLong' };
  }
  if (result.errorClass === 'transient') return { outcome: 'transient', reason: 'TransientError' };

  const exitedCleanly = result.exitCode === 0 && !result.agentError;
  if (!exitedCleanly) return { outcome: 'failed', reason: 'EpisodeFailed' };

  const claim = completionClaim(result, {
    onExitZero: completion.onExitZero,
    signals: completion.signals !== undefined,
  });
  // A score is weighed by judgeEpisode (completion.ts), with the evidence of the whole run.
  if (claim === undefined || claim === 'score') return { outcome: 'continue', reason: 'NoCompletionSignal' };
  if (completion.verify && result.verifyExitCode !== 0) return { outcome: 'failed', reason: 'VerifyFailed' };
  const reasons = { promise: 'PromiseDetected', exitSignal: 'ExitSignalDetected', exitZero: 'ExitedZero' };
  return { outcome: 'succeeded', reason: reasons[claim] };
}
