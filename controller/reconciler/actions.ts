// What reconcile() asks the loop to do, and the events it records: a leaf of the reconciler, so every rule
// module can build its actions without importing the reconciler's input types (types.ts imports those rules).
import type { EpisodeRecord } from '../api/episode-record.ts';
import type { Op } from '../api/ops.ts';
import type { EpisodeLeash } from '../api/episode-leash.ts';

/** `deleted`: cancelled because the task's spec was deleted (the record and the log say so). */
export type StopReason = 'cancelled' | 'deleted' | 'timeout';

/** What the loop does after writing the status, in the order listed. */
export type Action =
  /** Keep the immutable record of the episode that ended in this pass. */
  | { type: 'RecordEpisode'; record: EpisodeRecord }
  | {
      type: 'RecordEvent';
      eventType: 'Normal' | 'Warning';
      reason: string;
      message: string;
      /** Fields of its log line (an ended episode's outcome, exit code, cost). */
      details?: Record<string, unknown>;
      /** About the StartEpisode before it: the executor's fields about the start (a pid, a pod) join its details. */
      afterStart?: true;
    }
  | { type: 'StopEpisode'; number: number; reason: StopReason }
  /** Agent ops with effects outside the status (blackboard, spawn, send): idempotent per (task, episode). */
  /** credentialsDefault: the namespace default the task relied on, left out of its spawned children. */
  | { type: 'ApplyOps'; episode: number; ops: Op[]; credentialsDefault?: string }
  /** leash: what the episode may spend through the gateway (spend-cap.ts); a retried start has none. */
  | { type: 'StartEpisode'; number: number; leash?: EpisodeLeash }
  /**
   * Best-of-N: fast-forward the task's branch `into` to the winner's branch `from` (its workspace follows),
   * then delete the losers' branches listed; idempotent, so a restart carries it out again.
   */
  | { type: 'AdoptWinner'; winner: number; from: string; into: string; deleteBranches: string[] }
  /** Child tasks the task owns (a forEach step's items): created through CreatedTasks, idempotent by name. */
  | {
      type: 'CreateTasks';
      tasks: Array<{ name: string; spec: Record<string, unknown>; labels: Record<string, string> }>;
    }
  /** A deleted task with nothing running: its episode state, status and source entry go (always the last action). */
  | { type: 'ReleaseTask' };

export type Events = Extract<Action, { type: 'RecordEvent' }>[];

export function normal(reason: string, message: string): Events[number] {
  return { type: 'RecordEvent', eventType: 'Normal', reason, message };
}

export function warning(reason: string, message: string): Events[number] {
  return { type: 'RecordEvent', eventType: 'Warning', reason, message };
}
