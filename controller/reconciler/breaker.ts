// The circuit breaker (CLOSED → HALF_OPEN → OPEN), decided from each episode's evidence. An episode made
// progress if its workspace changed, the checklist advanced, or it succeeded. An episode with no evidence
// either way (the executor could not look) counts for nothing: a breaker must never trip on ignorance.
import type { Outcome } from '../api/agent-task.ts';
import type { BreakerSpec, BreakerStatus, ChecklistCounts, Evidence } from '../api/leash.ts';

/** Outcomes that say something about the agent's work; the rest (outages, limits, stops) do not count. */
const COUNTED: ReadonlySet<Outcome> = new Set(['succeeded', 'continue', 'failed', 'timeout']);

export interface BreakerStep {
  breaker: BreakerStatus;
  /** Set when the state changed. */
  transition?: {
    from: BreakerStatus['state'];
    to: BreakerStatus['state'];
    rule: 'noProgress' | 'sameError' | 'progress';
  };
  /** Why it opened, in words, with the evidence. */
  message?: string;
}

export const CLOSED: BreakerStatus = { state: 'Closed', noProgress: 0, halfOpen: 0, sameError: 0 };

/** A task re-opened (a spec edit, a resume): an open breaker gets a trial (HalfOpen), not a clean slate. */
export function reopenBreaker(breaker: BreakerStatus | undefined): BreakerStatus | undefined {
  return breaker?.state === 'Open' ? { ...breaker, state: 'HalfOpen', halfOpen: 0 } : breaker;
}

/** Whether the episode made progress; undefined when there is no evidence to tell. */
export function madeProgress(
  outcome: Outcome,
  evidence: Evidence | undefined,
  checklistBefore: ChecklistCounts | undefined,
): boolean | undefined {
  if (outcome === 'succeeded') return true;
  const checklist = evidence?.checklist;
  const advanced =
    checklist && checklistBefore
      ? finished(checklist) > finished(checklistBefore)
      : checklist
        ? finished(checklist) > 0
        : undefined;
  const changed = evidence?.workspace?.changed;
  if (changed === true || advanced === true) return true;
  if (changed === undefined && advanced === undefined) return undefined;
  return false;
}

export function stepBreaker(
  prev: BreakerStatus | undefined,
  spec: BreakerSpec,
  episode: { outcome: Outcome; evidence?: Evidence; checklistBefore?: ChecklistCounts; at: string },
): BreakerStep {
  const before = prev ?? CLOSED;
  if (!COUNTED.has(episode.outcome) || before.state === 'Open') return { breaker: before };
  const next: BreakerStatus = { ...before };

  const fingerprint =
    episode.outcome === 'succeeded' || episode.outcome === 'continue' ? undefined : episode.evidence?.errorFingerprint;
  next.sameError =
    fingerprint && fingerprint === before.lastErrorFingerprint ? before.sameError + 1 : fingerprint ? 1 : 0;
  next.lastErrorFingerprint = fingerprint;
  if (spec.sameErrorEpisodes > 0 && next.sameError >= spec.sameErrorEpisodes) {
    return open(before, next, 'sameError', `the same error ${next.sameError} episodes in a row: ${fingerprint}`);
  }

  const progress = madeProgress(episode.outcome, episode.evidence, episode.checklistBefore);
  if (progress === undefined) return { breaker: next };
  if (progress) {
    next.noProgress = 0;
    next.halfOpen = 0;
    next.lastProgressAt = episode.at;
    if (before.state === 'HalfOpen')
      return {
        breaker: { ...next, state: 'Closed' },
        transition: { from: 'HalfOpen', to: 'Closed', rule: 'progress' },
      };
    return { breaker: next };
  }
  next.noProgress = before.noProgress + 1;
  if (before.state === 'Closed') {
    if (spec.noProgressEpisodes === 0 || next.noProgress < spec.noProgressEpisodes) return { breaker: next };
    if (spec.halfOpenEpisodes === 0) return open(before, next, 'noProgress', noProgressMessage(next, episode.evidence));
    return {
      breaker: { ...next, state: 'HalfOpen', halfOpen: 0 },
      transition: { from: 'Closed', to: 'HalfOpen', rule: 'noProgress' },
    };
  }
  next.halfOpen = before.halfOpen + 1;
  if (next.halfOpen >= spec.halfOpenEpisodes)
    return open(before, next, 'noProgress', noProgressMessage(next, episode.evidence));
  return { breaker: next };
}

function open(
  before: BreakerStatus,
  next: BreakerStatus,
  rule: 'noProgress' | 'sameError',
  message: string,
): BreakerStep {
  return {
    breaker: { ...next, state: 'Open', trippedBy: rule },
    transition: { from: before.state, to: 'Open', rule },
    message,
  };
}

/**
 * What the episode's evidence says of progress, in words that claim no more than it shows: "changed the
 * workspace", "left the workspace unchanged", "showed no evidence of progress either way (…)".
 */
export function progressWords(
  outcome: Outcome,
  evidence: Evidence | undefined,
  checklistBefore: ChecklistCounts | undefined,
): string {
  const changed = evidence?.workspace?.changed;
  const checklist = evidence?.checklist;
  const list = checklist ? `checklist ${finished(checklist)}/${checklist.total}` : undefined;
  const progress = madeProgress(outcome, evidence, checklistBefore);
  if (progress === undefined)
    return 'showed no evidence of progress either way (workspace not inspected, no checklist)';
  if (progress) {
    if (changed === true) return `changed the workspace${list ? ` (${list})` : ''}`;
    if (list) return `advanced the ${list}`;
    return 'finished the task';
  }
  const ws =
    changed === false ? 'left the workspace unchanged' : 'made no checklist progress (workspace not inspected)';
  return list ? `${ws} (${list})` : ws;
}

function noProgressMessage(b: BreakerStatus, evidence: Evidence | undefined): string {
  const ws = evidence?.workspace;
  const seen = ws
    ? ws.kind === 'git'
      ? `HEAD ${ws.headAfter?.slice(0, 12) ?? 'unknown'}, tree unchanged`
      : 'directory unchanged'
    : 'workspace not inspected';
  const list = evidence?.checklist ? `; checklist ${finished(evidence.checklist)}/${evidence.checklist.total}` : '';
  const since = b.lastProgressAt ? `; last progress ${b.lastProgressAt}` : '; no progress yet';
  return `no progress in ${b.noProgress} episodes in a row (${seen}${list}${since})`;
}

function finished(c: ChecklistCounts): number {
  return c.done + c.skipped;
}
