// When a trigger's next pass is due, as pure rules over an injected clock and jitter: the fixed waits of each
// kind of pass, the backoff after a failed one (util/retry-delay.ts, the one backoff formula), and the timer
// delays of a trigger woken by a webhook. Every wait a trigger makes is named here, with its reason.
import type { Phase } from '../api/agent-task-status.ts';
import { type RetryBackoff, retryDelayMs } from '../util/retry-delay.ts';
import { phaseWakesTrigger } from './trigger-schedule.ts';

/** A suspended trigger looks again each minute: its status shows it alive, and un-suspending needs no nudge. */
export const SUSPENDED_RECHECK_MS = 60_000;
/** A webhook source has nothing to poll: its pass only creates held items and reports, once a minute. */
export const WEBHOOK_PASS_MS = 60_000;
/** A cron expression with no tick ahead (croner found none) is looked at again hourly. */
export const SCHEDULE_IDLE_MS = 3_600_000;
/** A failure that is not the forge's (the apiserver busy, a file) is retried from this, doubling. */
export const LOCAL_RETRY_MS = 5_000;
/** A refused status write is tried again this soon: the pass's outcome is not on record until it lands. */
export const STATUS_RETRY_MS = 5_000;
/** No backoff waits longer than this: a forge back from an outage is seen within a quarter hour. */
export const MAX_BACKOFF_MS = 15 * 60_000;
/** A rate limit whose reset has already passed still waits this long: the forge's clock may be behind ours. */
export const RATE_LIMIT_MIN_MS = 1_000;
/** Timers: a pass never follows the one before sooner than this, so a pass that says "now" cannot spin. */
export const MIN_PASS_GAP_MS = 1_000;
/** A delivery-woken pass is followed by one more this soon: a delivery can outrun the forge's own issue index. */
export const FOLLOW_UP_MS = 3_000;
/** A forge failing for a source without pollSeconds (a webhook's report forge) waits as a default poll would. */
export const DEFAULT_POLL_SECONDS = 60;

/** What went wrong in a pass, as the runner observed it (forge-poll.ts failureOf). */
export type TriggerFailure =
  | { kind: 'rateLimited'; resetAt: Date; message: string }
  /** The forge down or refusing the token: waits a poll interval, doubling. */
  | { kind: 'forge'; message: string }
  /** Anything else (the apiserver, a file, a missing token): retried sooner. */
  | { kind: 'other'; message: string };

/** The backoff of a failing trigger: from pollSeconds for a forge failure, LOCAL_RETRY_MS otherwise. */
export function triggerBackoff(failure: TriggerFailure, pollSeconds: number | undefined): RetryBackoff {
  const initialMs = failure.kind === 'forge' ? (pollSeconds ?? DEFAULT_POLL_SECONDS) * 1000 : LOCAL_RETRY_MS;
  return { initialMs, factor: 2, maxMs: MAX_BACKOFF_MS };
}

/** When the pass after the `attempt`-th failure in a row is due. A rate limit waits for the forge's reset, not a guess. */
export function failedPassAt(
  failure: TriggerFailure,
  attempt: number,
  pollSeconds: number | undefined,
  now: Date,
  jitter: number,
): Date {
  if (failure.kind === 'rateLimited')
    return new Date(Math.max(failure.resetAt.getTime(), now.getTime() + RATE_LIMIT_MIN_MS));
  return new Date(now.getTime() + retryDelayMs(triggerBackoff(failure, pollSeconds), attempt, jitter));
}

/** The pass after one whose status could not be written: at its own time, or STATUS_RETRY_MS if sooner. */
export function afterStatusWriteFailed(next: Date, now: Date): Date {
  return new Date(Math.min(next.getTime(), now.getTime() + STATUS_RETRY_MS));
}

/** The state of a trigger's timer between passes (sources/triggers/local-triggers.ts TriggerTimers). */
export interface TimerWake {
  /** A webhook woke the trigger while its pass ran. */
  wokenWhileRunning: boolean;
  /** The pass that just ran was woken by a delivery. */
  followUp: boolean;
}

/** The delay before a trigger's next pass, and whether that pass is a follow-up of a delivery. */
export function nextTimerDelay(next: Date, now: Date, wake: TimerWake): { delayMs: number; followUp: boolean } {
  const due = Math.max(MIN_PASS_GAP_MS, next.getTime() - now.getTime());
  if (wake.wokenWhileRunning) return { delayMs: 0, followUp: true };
  return { delayMs: wake.followUp ? Math.min(FOLLOW_UP_MS, due) : due, followUp: false };
}

/**
 * Whether a task's phase change makes its trigger's next pass now (which moves wake which trigger:
 * trigger-schedule.ts phaseWakesTrigger). First sight (a start, a new task) wakes nothing: the trigger's own
 * pass reports it.
 */
export function wakeOnPhase(
  before: { seen: boolean; phase?: string },
  phase: string | undefined,
  spec: Parameters<typeof phaseWakesTrigger>[0] | undefined,
): boolean {
  if (!before.seen || before.phase === phase || !spec) return false;
  return phaseWakesTrigger(spec, phase as Phase | undefined);
}
