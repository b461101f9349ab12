// Turns the facts an executor reports into the one outcome the rules act on.
import type { AgentTaskSpec, Outcome } from '../api/agent-task.ts';
import type { EpisodeResult } from '../api/episode-result.ts';

export interface ClassifiedOutcome {
  outcome: Outcome;
  /** CamelCase reason for status and events. */
  reason: string;
}

export function classifyOutcome(result: EpisodeResult, completion: AgentTaskSpec['completion']): ClassifiedOutcome {
  // Order matters: how the episode ended beats what it printed.
  if (result.cancelled) return { outcome: 'cancelled', reason: 'Cancelled' };
  if (result.interrupted) return { outcome: 'interrupted', reason: 'Interrupted' };
  if (result.timedOut) return { outcome: 'timeout', reason: 'EpisodeTimeout' };
  if (result.errorClass === 'usageLimit') return { outcome: 'usageLimit', reason: 'UsageLimit' };
  if (result.errorClass === 'fatal') return { outcome: 'fatal', reason: 'FatalError' };
  if (result.errorClass === 'contextTooLong') {
    return { outcome: completion.contextTooLong === 'failed' ? 'failed' : 'fatal', reason: 'ContextTooLong' };
  }
  if (result.errorClass === 'transient') return { outcome: 'transient', reason: 'TransientError' };

  const exitedCleanly = result.exitCode === 0 && !result.agentError;
  if (!exitedCleanly) return { outcome: 'failed', reason: 'EpisodeFailed' };

  const signal = result.completion ?? (completion.onExitZero ? 'exitZero' : undefined);
  if (signal === undefined) return { outcome: 'continue', reason: 'NoCompletionSignal' };
  if (completion.verify && result.verifyExitCode !== 0) return { outcome: 'failed', reason: 'VerifyFailed' };
  const reasons = { promise: 'PromiseDetected', exitSignal: 'ExitSignalDetected', exitZero: 'ExitedZero' };
  return { outcome: 'succeeded', reason: reasons[signal] };
}

/** Outcomes that say nothing about the agent's work and so never count as failures. */
export function isRetryWithoutPenalty(outcome: Outcome): boolean {
  return outcome === 'transient' || outcome === 'usageLimit' || outcome === 'interrupted' || outcome === 'cancelled';
}
