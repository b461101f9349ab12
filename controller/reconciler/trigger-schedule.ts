// Schedule triggers as pure rules over an injected "now": which tick is due, the task it becomes
// (TRIGGER-YYYYMMDD-HHMM, its tick in UTC: deterministic, so a restart never makes a tick twice), what
// concurrencyPolicy does with tasks still running, and which finished ones historyLimit deletes. croner does
// the calendar (time zones, DST: a tick in a skipped hour runs once after the jump, a repeated hour runs once).
import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { DNS_LABEL_MAX } from '../api/agent-task.ts';
import type { ScheduleSource } from '../api/agent-trigger.ts';
import { isTerminal, type Phase } from '../api/agent-task-status.ts';
import type { ExistingTask } from './trigger-items.ts';

/** The label holding a schedule task's tick (minutes since the epoch). */
export const TICK_LABEL = 'episodic.dev/trigger-tick';
const MINUTE_MS = 60_000;
/** Catching up over more missed ticks than this is not done (as CronJob): only the newest one runs. */
const MAX_TICKS_SCANNED = 10_000;

/** A tick as its task's TICK_LABEL holds it: minutes since the epoch. */
export function tickMinute(tick: Date): string {
  return String(Math.floor(tick.getTime() / MINUTE_MS));
}

/** A tick as a schedule task's name ends: its minute in UTC, 20261201-1844 (whatever schedule.timeZone is). */
export function tickStamp(tick: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  const day = `${tick.getUTCFullYear()}${two(tick.getUTCMonth() + 1)}${two(tick.getUTCDate())}`;
  return `${day}-${two(tick.getUTCHours())}${two(tick.getUTCMinutes())}`;
}

/** Hex digits of the trigger name's digest in a cut name: two long triggers sharing a prefix stay apart. */
const CUT_DIGEST_LENGTH = 4;

/**
 * The one name rule of a schedule's task: TRIGGER-20261201-1844, the tick in UTC, a DNS label of at most 63
 * characters. A trigger name too long for that (TRIGGER_NAME_MAX is 50) is cut and followed by a digest of it.
 */
export function tickName(trigger: string, tick: Date): string {
  const stamp = tickStamp(tick);
  const name = `${trigger}-${stamp}`;
  if (name.length <= DNS_LABEL_MAX) return name;
  const digest = createHash('sha256').update(trigger).digest('hex').slice(0, CUT_DIGEST_LENGTH);
  const room = DNS_LABEL_MAX - stamp.length - CUT_DIGEST_LENGTH - 2;
  return `${trigger.slice(0, room)}-${digest}-${stamp}`;
}

function cronOf(schedule: Pick<ScheduleSource, 'cron' | 'timeZone'>): Cron {
  return new Cron(schedule.cron, { timezone: schedule.timeZone, paused: true });
}

/** The first tick strictly after `after`. */
export function nextTick(schedule: Pick<ScheduleSource, 'cron' | 'timeZone'>, after: Date): Date | undefined {
  return cronOf(schedule).nextRun(after) ?? undefined;
}

/** The newest tick in (since, now], if any: the one a (re)started controller runs; older missed ones are dropped. */
export function newestDueTick(
  schedule: Pick<ScheduleSource, 'cron' | 'timeZone'>,
  since: Date,
  now: Date,
): { tick: Date; missed: number } | undefined {
  const cron = cronOf(schedule);
  let due: Date | undefined;
  let missed = 0;
  for (let t = cron.nextRun(since); t && t <= now && missed < MAX_TICKS_SCANNED; t = cron.nextRun(t)) {
    if (due) missed++;
    due = t;
  }
  return due ? { tick: due, missed } : undefined;
}

export type ScheduleDecision =
  | { action: 'wait'; next?: Date }
  | { action: 'skip'; tick: Date; reason: string; next?: Date }
  | { action: 'create'; tick: Date; name: string; replace: string[]; next?: Date };

/**
 * What to do at `now`: `lastTick` is the newest tick already handled (created or skipped), or when the trigger
 * was first seen. Running = this trigger's unfinished tasks.
 */
export function decideSchedule(input: {
  trigger: string;
  schedule: ScheduleSource;
  lastTick: Date;
  now: Date;
  existing: ExistingTask[];
  maxConcurrency: number;
  maxTotal?: number;
  createdTotal: number;
}): ScheduleDecision {
  const { schedule, now } = input;
  const next = nextTick(schedule, now);
  const due = newestDueTick(schedule, input.lastTick, now);
  if (!due) return { action: 'wait', next: nextTick(schedule, input.lastTick) ?? next };
  const { tick } = due;
  const name = tickName(input.trigger, tick);
  const skip = (reason: string): ScheduleDecision => ({ action: 'skip', tick, reason, next });
  // By its label too: a task made under the old name rule (TRIGGER-<minutes since the epoch>) is the same tick.
  const minute = tickMinute(tick);
  if (input.existing.some((t) => t.name === name || t.labels[TICK_LABEL] === minute)) return skip('its task exists');
  const late = (now.getTime() - tick.getTime()) / 1000;
  if (schedule.startingDeadlineSeconds !== undefined && late > schedule.startingDeadlineSeconds)
    return skip(`missed by ${Math.round(late)} s, past startingDeadlineSeconds`);
  if (input.maxTotal !== undefined && input.createdTotal >= input.maxTotal) return skip('maxTotal reached');
  const running = input.existing.filter((t) => !t.finished).map((t) => t.name);
  if (running.length > 0 && schedule.concurrencyPolicy === 'Forbid') return skip('a task is still running (Forbid)');
  if (schedule.concurrencyPolicy === 'Replace') return { action: 'create', tick, name, replace: running, next };
  if (running.length >= input.maxConcurrency) return skip('maxConcurrency tasks are running');
  return { action: 'create', tick, name, replace: [], next };
}

/**
 * Whether a task's move to `phase` wakes its trigger's pass now: a report follows every move, a webhook
 * source's pass creates the items it held when a slot frees, and a schedule's pass deletes the finished tasks
 * past historyLimit as soon as one finishes (waiting for the next tick kept historyLimit + 1 of them).
 */
export function phaseWakesTrigger(
  spec: { report?: unknown; source: { webhook?: unknown; schedule?: unknown } },
  phase: Phase | undefined,
): boolean {
  if (spec.report || spec.source.webhook) return true;
  return !!spec.source.schedule && isTerminal(phase);
}

/** Finished schedule tasks past historyLimit, oldest tick first: the ones to delete. */
export function pastHistory(existing: ExistingTask[], historyLimit: number): string[] {
  const finished = existing
    .filter((t) => t.finished && t.labels[TICK_LABEL] !== undefined)
    .sort((a, b) => Number(b.labels[TICK_LABEL]) - Number(a.labels[TICK_LABEL]));
  return finished.slice(historyLimit).map((t) => t.name);
}
