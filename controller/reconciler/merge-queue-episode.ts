// A merge queue's resolution episode is an episode of its task (issue 32 §3): it takes the task's next
// episode number, counts in the task's episodes, spend and tokens, and leaves a record like any other.
// Pure: the ended episode's result in, the status and record the queue loop writes out.
import type { AgentTaskStatus, LastEpisode } from '../api/agent-task.ts';
import { episodeNumbersUsed } from '../api/agent-task.ts';
import { addTokens, roundUSD } from '../api/bounds.ts';
import { spentBy } from '../api/episode-result.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { episodeRecordOf } from '../api/episode-record.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';

/** The record's reason: a resolution episode, not one of the task's own loop. */
export const RESOLUTION_REASON = 'MergeQueueResolution';

/** The number a resolution episode takes: the task's next. */
export function resolutionEpisodeNumber(status: AgentTaskStatus): number {
  return episodeNumbersUsed(status) + 1;
}

/** How a resolution episode ended; whether it resolved anything is the queue's check (markers, gates). */
export function resolutionOutcome(result: EpisodeResult): LastEpisode['outcome'] {
  if (result.interrupted) return 'interrupted';
  if (result.timedOut) return 'timeout';
  if (result.cancelled) return 'cancelled';
  if (result.errorClass === 'transient' || result.errorClass === 'usageLimit') return result.errorClass;
  if (result.errorClass === 'fatal') return 'fatal';
  return result.exitCode === 0 && !result.agentError ? 'succeeded' : 'failed';
}

export interface EndedResolution {
  number: number;
  startedAt: string;
  finishedAt: string;
  result: EpisodeResult;
}

/**
 * The task's status with the episode counted (its phase, lastEpisode and loop counters stay: the task's own
 * loop is over) and the episode's record.
 */
export function recordResolution(
  task: string,
  status: AgentTaskStatus,
  ended: EndedResolution,
): { status: AgentTaskStatus; record: EpisodeRecord } {
  const spent = spentBy(ended.result);
  const last: LastEpisode = {
    number: ended.number,
    outcome: resolutionOutcome(ended.result),
    exitCode: ended.result.exitCode,
    startedAt: ended.startedAt,
    finishedAt: ended.finishedAt,
    costUSD: spent.costUSD,
    message: ended.result.message,
  };
  return {
    status: {
      ...status,
      episodes: status.episodes + 1,
      costUSD: roundUSD(status.costUSD + spent.costUSD),
      tokens: addTokens(status.tokens, spent.tokens),
    },
    record: episodeRecordOf(task, last, RESOLUTION_REASON, ended.result),
  };
}
