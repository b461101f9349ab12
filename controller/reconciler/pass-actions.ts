// The actions of one pass in the order the loop carries them out, once the status is written: the record
// of the episode that ended, the events, the stops, then a start and the event that announces it.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { episodeRecordOf } from '../api/episode-record.ts';
import type { EpisodeRecord } from '../api/episode-record.ts';
import type { Action, Events } from './actions.ts';
import type { ObservedEpisode } from './types.ts';

export interface PassFacts {
  name: string;
  /** The status on record before the pass. */
  before: AgentTaskStatus;
  /** The status the pass decided. */
  status: AgentTaskStatus;
  /** The newest episode as the pass saw it (see observedEpisode). */
  episode: ObservedEpisode | undefined;
  /** Events of the pass, in the order they happened. */
  events: Events;
  /** The decision's stops, or its start followed by the event that announces it. */
  decided: readonly Action[];
  startToRetry?: number;
  /** The reason the pass judged the ended episode by, before a hold (a budget, a slot, a suspend) replaced it. */
  endReason?: string;
}

/** The executor's view, except that an episode whose start is being retried has not vanished: it is still starting. */
export function observedEpisode(
  episode: ObservedEpisode | undefined,
  startToRetry: number | undefined,
): ObservedEpisode | undefined {
  if (episode?.state === 'gone' && !episode.removedBy && episode.number === startToRetry) return undefined;
  return episode;
}

/** The episode on record before the pass ended in it: the new status no longer has it running. */
export function episodeEnded(
  before: AgentTaskStatus,
  episode: ObservedEpisode | undefined,
  status: AgentTaskStatus,
): boolean {
  return (
    episode !== undefined &&
    episode.state !== 'running' &&
    episode.number === before.currentEpisode?.number &&
    status.currentEpisode?.number !== episode.number
  );
}

/**
 * The ended episode's immutable record, once the status records it. Its reason is the one its end was judged
 * by (a hold the same pass put on the task is the task's, not the episode's), or none when the next episode
 * started at once.
 */
export function endedEpisodeRecord(
  name: string,
  episode: ObservedEpisode,
  status: AgentTaskStatus,
  endReason?: string,
): EpisodeRecord | undefined {
  const last = status.lastEpisode;
  if (last?.number !== episode.number) return undefined;
  const reason = status.currentEpisode ? undefined : (endReason ?? status.reason);
  return episodeRecordOf(name, last, reason, episode.result);
}

/** Log fields of an episode's end: the event line says how it went. */
export function endFields(episode: ObservedEpisode, status: AgentTaskStatus): Record<string, unknown> {
  const result = episode.result;
  return {
    episode: episode.number,
    outcome: status.lastEpisode?.outcome,
    exitCode: result?.exitCode ?? null,
    errorClass: result?.errorClass,
    costUSD: result?.costUSD ?? 0,
    completion: result?.completion,
  };
}

/** An episode on record whose start failed is started again while the status still has it as the current one. */
export function retriedStart(status: AgentTaskStatus, startToRetry: number | undefined): Action[] {
  return startToRetry !== undefined && startToRetry === status.currentEpisode?.number
    ? [{ type: 'StartEpisode', number: startToRetry }]
    : [];
}

/** Everything the loop does after writing the status, in order, and whether an episode ended in this pass. */
export function passActions(p: PassFacts): { actions: Action[]; ended: boolean } {
  const ended = episodeEnded(p.before, p.episode, p.status);
  const record = ended && p.episode ? endedEpisodeRecord(p.name, p.episode, p.status, p.endReason) : undefined;
  const details = ended && p.episode ? endFields(p.episode, p.status) : undefined;
  const starts = p.decided.some((a) => a.type === 'StartEpisode');
  return {
    actions: [
      ...(record ? [{ type: 'RecordEpisode' as const, record }] : []),
      ...p.events.map((e) => (details ? { ...e, details } : e)),
      ...p.decided,
      ...(starts ? [] : retriedStart(p.status, p.startToRetry)),
    ],
    ended,
  };
}
