// Recording an episode's end: its facts become an outcome, counters, spend and the next phase.
import type { AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { DEFAULT_SPEC, isTerminal } from '../api/agent-task.ts';
import { addTokens, clip, EPISODE_MESSAGE_MAX, roundUSD } from '../api/bounds.ts';
import { episodeResult, spentBy } from '../api/episode-result.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { stepBreaker } from './breaker.ts';
import { countTestOnly, judgeEpisode } from './completion.ts';
import { progressStatus } from './progress.ts';
import { stepRecord } from './steps.ts';
import { normal, warning } from './actions.ts';
import { OUTCOME_RULES } from './outcome-rules.ts';
import type { Events } from './actions.ts';
import type { ObservedEpisode, ReconcileInput } from './types.ts';

const SPEC_DELETED = 'episode cancelled: spec deleted';
const SPEC_DELETED_AFTER = 'spec deleted before its end was recorded';

/**
 * The episode's end as a result, when it ended. A stop this controller asked for decides the outcome over
 * what the process or pod reported while being killed; an episode that vanished without a result ended as
 * its remover (or its absence) says.
 */
export function endedEpisode(
  episode: ObservedEpisode | undefined,
  stop: ReconcileInput['stopRequested'],
  deleted = false,
): ObservedEpisode | undefined {
  const ended = endedAsObserved(episode, stop);
  const stoppedForDeletion = stop?.number === ended?.number && stop?.reason === 'deleted';
  // Its spec went before its end was recorded (a controller killed meanwhile): the record says so.
  return ended?.result && deleted && !stoppedForDeletion ? withSpecDeletedNote(ended, ended.result) : ended;
}

function withSpecDeletedNote(ended: ObservedEpisode, result: EpisodeResult): ObservedEpisode {
  const message = clip(
    result.message ? `${result.message}; ${SPEC_DELETED_AFTER}` : SPEC_DELETED_AFTER,
    EPISODE_MESSAGE_MAX,
  );
  return { ...ended, result: { ...result, message } };
}

function endedAsObserved(
  episode: ObservedEpisode | undefined,
  stop: ReconcileInput['stopRequested'],
): ObservedEpisode | undefined {
  if (!episode || episode.state === 'running') return undefined;
  const stopped = stop?.number === episode.number ? stop.reason : undefined;
  if (stopped) {
    const exitCode = episode.result?.exitCode ?? null;
    const result =
      stopped === 'timeout'
        ? episodeResult({
            exitCode,
            timedOut: true,
            message: episode.result?.timedOut ? episode.result.message : 'episode timed out; stopped',
          })
        : episodeResult({
            exitCode,
            cancelled: true,
            message: stopped === 'deleted' ? SPEC_DELETED : 'episode cancelled; stopped',
          });
    return {
      ...episode,
      state: 'finished',
      result: {
        ...result,
        costUSD: episode.result?.costUSD ?? 0,
        tokens: episode.result?.tokens ?? result.tokens,
        ...(episode.result?.gateway ? { gateway: episode.result.gateway } : {}),
      },
    };
  }
  if (episode.state === 'finished') return episode.result ? episode : undefined;
  const n = episode.number;
  const result =
    episode.removedBy === 'someone-else'
      ? episodeResult({
          exitCode: null,
          errorClass: 'transient',
          message: `episode ${n} was deleted by someone else (its pod or process)`,
        })
      : episodeResult({
          exitCode: null,
          interrupted: true,
          message:
            episode.removedBy === 'controller'
              ? `episode ${n} was stopped by an earlier controller`
              : `episode ${n} was on record but never started (the controller stopped in between)`,
        });
  return { ...episode, state: 'finished', result };
}

/** A running episode the status does not know (status write lost before a crash): adopt it, never re-run its number. */
export function adoptUnknownEpisode(
  status: AgentTaskStatus,
  episode: ObservedEpisode | undefined,
  now: string,
): AgentTaskStatus {
  if (!episode || status.currentEpisode) return status;
  if (episode.number <= (status.lastEpisode?.number ?? 0)) return status;
  return {
    ...status,
    // A number past those on record: the episodes between ran (a skipWhen check's number is no episode).
    episodes: episodesRan(status, episode.number),
    currentEpisode: { number: episode.number, startedAt: episode.startedAt ?? now },
  };
}

/** Episodes that ran an agent by episode number n: numbers count skipWhen checks too, which are no episode. */
function episodesRan(status: AgentTaskStatus, n: number): number {
  return Math.max(status.episodes, n - (status.skippedSteps ?? 0));
}

/** The status that records the episode's end, and the events that say how it ended. */
export function recordEpisode(
  prev: AgentTaskStatus,
  episode: ObservedEpisode,
  input: ReconcileInput,
): { status: AgentTaskStatus; events: Events } {
  const events: Events = [];
  const result = episode.result as EpisodeResult;
  const now = input.now;
  const completion = input.spec?.completion ?? DEFAULT_SPEC.completion;
  const n = episode.number;
  const evidence = result.evidence;
  const changed = evidence?.workspace?.changed === true;
  const counters = {
    ...prev,
    // completion.minEpisodes counts the episodes of the step in a pipeline.
    episodes: stepRecord(prev)?.episodes ?? episodesRan(prev, n),
    workspaceChanges: prev.workspaceChanges + (changed ? 1 : 0),
  };
  if (completion.signals) counters.testOnlyEpisodes = countTestOnly(prev.testOnlyEpisodes ?? 0, result);
  const judged = judgeEpisode(result, completion, counters);
  const { outcome } = judged;
  const detail = result.message ? `: ${result.message}` : '';
  const status: AgentTaskStatus = {
    ...prev,
    workspaceChanges: counters.workspaceChanges,
    ...(completion.signals ? { testOnlyEpisodes: counters.testOnlyEpisodes } : {}),
    progress: evidence?.checklist ? progressStatus(evidence.checklist) : prev.progress,
    currentEpisode: undefined,
    nextEpisodeAt: undefined,
    costUSD: roundUSD(prev.costUSD + spentBy(result).costUSD),
    tokens: addTokens(prev.tokens, spentBy(result).tokens),
    lastEpisode: {
      number: n,
      outcome,
      exitCode: result.exitCode,
      startedAt: episode.startedAt ?? prev.currentEpisode?.startedAt,
      finishedAt: episode.finishedAt ?? now.toISOString(),
      costUSD: spentBy(result).costUSD,
      message: result.message,
      ...(judged.score ? { completionScore: judged.score.score, completionSignals: judged.score.signals } : {}),
    },
  };
  const setPhase = (phase: Phase, why: string, message: string): void => {
    status.phase = phase;
    status.reason = why;
    status.message = message;
  };
  OUTCOME_RULES[outcome]({ prev, status, events, result, judged, n, detail, setPhase, input, completion });
  const step = stepBreaker(prev.breaker, input.spec?.breaker ?? DEFAULT_SPEC.breaker, {
    outcome,
    evidence,
    checklistBefore: prev.progress,
    at: status.lastEpisode?.finishedAt ?? now.toISOString(),
  });
  status.breaker = step.breaker;
  if (step.transition?.to === 'Open' && !isTerminal(status.phase)) {
    status.nextEpisodeAt = undefined;
    setPhase('NeedsReview', 'CircuitOpen', `circuit breaker open: ${step.message}`);
    events.push(warning('CircuitOpen', status.message as string));
  } else if (step.transition) {
    // The task already ended (a breaker may open on the episode that also skipped it): the event says why it opened.
    const { from, to, rule } = step.transition;
    const words =
      to === 'Open'
        ? step.message
        : to === 'HalfOpen'
          ? `no progress in ${step.breaker.noProgress} episodes; watching`
          : 'progress again';
    events.push(
      (to === 'Closed' ? normal : warning)(`Breaker${to}`, `circuit breaker ${from} → ${to} (${rule}): ${words}`),
    );
  }
  return { status, events };
}
