// What each outcome of an episode does to the task, one row per outcome (record-episode.ts applies the row,
// then the breaker): its counters, the next phase and the events that say so. A Record over Outcome, so a
// new outcome without a row fails typecheck.
import type { AgentTaskSpec, AgentTaskStatus, Outcome, Phase } from '../api/agent-task.ts';
import { DEFAULT_SPEC } from '../api/agent-task.ts';
import { clip, EPISODE_MESSAGE_MAX } from '../api/bounds.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { normal, warning } from './actions.ts';
import type { Events } from './actions.ts';
import { backoffMs } from './backoff.ts';
import { progressWords } from './breaker.ts';
import type { JudgedEpisode } from './completion.ts';
import { usageLimitResumeAt } from './types.ts';
import type { ReconcileInput } from './types.ts';

/** One episode's end as the rows see it; `status` is the record being written, `prev` the one before. */
export interface OutcomeFacts {
  prev: AgentTaskStatus;
  status: AgentTaskStatus;
  events: Events;
  result: EpisodeResult;
  judged: JudgedEpisode;
  /** The episode's number. */
  n: number;
  /** ": MESSAGE" from the result, or "". */
  detail: string;
  setPhase(phase: Phase, why: string, message: string): void;
  input: ReconcileInput;
  completion: AgentTaskSpec['completion'];
}

type OutcomeRule = (f: OutcomeFacts) => void;

export const OUTCOME_RULES: Record<Outcome, OutcomeRule> = {
  succeeded: succeeded,
  continue: continued,
  failed: failedOrTimedOut,
  timeout: failedOrTimedOut,
  transient: transient,
  usageLimit: usageLimit,
  fatal: ({ n, detail, status, events, judged, setPhase }) => {
    setPhase('Failed', judged.reason, `episode ${n} failed fatally${detail}`);
    events.push(warning('TaskFailed', status.message as string));
  },
  interrupted: ({ n, detail, status, events, setPhase }) => {
    setPhase('Pending', 'Interrupted', `episode ${n} was interrupted${detail}; retrying`);
    events.push(warning('EpisodeInterrupted', status.message as string));
  },
  cancelled: cancelled,
  // A skipWhen step is recorded by skip-scope.ts and never judged here; its row changes nothing.
  skipped: () => {},
};

function succeeded({ prev, status, events, judged, n, setPhase }: OutcomeFacts): void {
  const { reason } = judged;
  status.consecutiveFailures = 0;
  status.consecutiveRetries = 0;
  const score = reason === 'SignalsScore' ? scoreWords(judged.score) : '';
  setPhase('Succeeded', reason, `episode ${n} finished the task (${reason}${score})${skipWords(prev)}`);
  events.push(normal('EpisodeSucceeded', `episode ${n} succeeded (${reason})`));
}

function continued({ prev, status, events, result, judged, n, setPhase, completion }: OutcomeFacts): void {
  status.consecutiveFailures = 0;
  status.consecutiveRetries = 0;
  if (judged.missing) {
    const why = `completion claimed without evidence: missing ${judged.missing}`;
    status.lastEpisode = {
      ...status.lastEpisode!,
      message: clip(result.message ? `${why} (agent: ${result.message})` : why, EPISODE_MESSAGE_MAX),
    };
    setPhase('Pending', judged.reason, `episode ${n} ${why}; continuing`);
    events.push(warning('CompletionRejected', status.message as string));
    return;
  }
  const signal = judged.score
    ? `a completion score of ${judged.score.score} below ${completion.signals?.threshold} ${scored(judged.score)}`
    : 'no completion signal';
  const progress = progressWords(judged.outcome, result.evidence, prev.progress);
  setPhase('Pending', 'EpisodeFinished', `episode ${n} exited 0 with ${signal}; continuing`);
  events.push(normal('EpisodeFinished', `episode ${n} ${progress}; ${signal}`));
}

function failedOrTimedOut({ prev, status, events, judged, n, detail, setPhase, input }: OutcomeFacts): void {
  const maxFailures = (input.spec?.limits ?? DEFAULT_SPEC.limits).maxConsecutiveFailures;
  status.consecutiveFailures = prev.consecutiveFailures + 1;
  status.consecutiveRetries = 0;
  const what = judged.outcome === 'timeout' ? 'timed out' : `failed (${judged.reason})`;
  events.push(warning('EpisodeFailed', `episode ${n} ${what}${detail}`));
  if (status.consecutiveFailures >= maxFailures) {
    const message = `${status.consecutiveFailures} consecutive failed episodes; last ${what}${detail}`;
    setPhase('Skipped', 'ConsecutiveFailures', message);
    events.push(warning('TaskSkipped', status.message as string));
    return;
  }
  status.nextEpisodeAt = backoffUntil(input, status.consecutiveFailures);
  const failures = `failure ${status.consecutiveFailures}/${maxFailures}`;
  setPhase('Waiting', 'Backoff', `episode ${n} ${what}; ${failures}, next episode at ${status.nextEpisodeAt}`);
}

function transient({ prev, status, events, n, detail, setPhase, input }: OutcomeFacts): void {
  status.retries = prev.retries + 1;
  status.consecutiveRetries = prev.consecutiveRetries + 1;
  status.nextEpisodeAt = backoffUntil(input, status.consecutiveRetries);
  setPhase('Waiting', 'Backoff', `episode ${n} hit a transient error${detail}; retrying at ${status.nextEpisodeAt}`);
  events.push(warning('EpisodeRetrying', status.message as string));
}

function usageLimit({ prev, status, events, result, n, setPhase, input }: OutcomeFacts): void {
  status.retries = prev.retries + 1;
  status.nextEpisodeAt = new Date(usageLimitResumeAt(result.resetAt, input.now.getTime())).toISOString();
  setPhase('Waiting', 'UsageLimit', `episode ${n} hit the agent's usage limit; resuming at ${status.nextEpisodeAt}`);
  events.push(warning('UsageLimit', status.message as string));
}

function cancelled({ status, events, result, judged, n, setPhase }: OutcomeFacts): void {
  if (judged.reason === 'BudgetExceeded') {
    // The gateway refused for lack of budget: the cap rule stops the task on the next pass.
    const refused = result.gateway?.refused ?? 'budget exhausted';
    setPhase('Pending', judged.reason, `episode ${n} stopped at the gateway: ${refused}`);
    events.push(warning('BudgetExceeded', status.message as string));
    return;
  }
  setPhase('Pending', 'Cancelled', `episode ${n} was cancelled`);
  events.push(normal('EpisodeCancelled', status.message as string));
}

/** The next episode's time after `count` failures or retries in a row (the spec's backoff, jittered). */
function backoffUntil(input: ReconcileInput, count: number): string {
  const wait = backoffMs(input.spec?.backoff ?? DEFAULT_SPEC.backoff, count, input.jitter);
  return new Date(input.now.getTime() + wait).toISOString();
}

/** "; 1 episode ran, 3 steps skipped": episode numbers count skipWhen checks too, so the end says what ran. */
function skipWords(status: AgentTaskStatus): string {
  const skipped = status.skippedSteps ?? 0;
  if (skipped === 0) return '';
  const ran = status.episodes;
  return `; ${ran} episode${ran === 1 ? '' : 's'} ran, ${skipped} step${skipped === 1 ? '' : 's'} skipped`;
}

/** ": score 90 (exitSignal+50, checklist+40)" for a task finished by its signals score. */
function scoreWords(score: { score: number; signals: string[] } | undefined): string {
  return score ? `: score ${score.score} ${scored(score)}` : '';
}

/** "(exitSignal+50, checklist+40)", or "(nothing scored)". */
function scored(score: { signals: string[] }): string {
  return score.signals.length > 0 ? `(${score.signals.join(', ')})` : '(nothing scored)';
}
