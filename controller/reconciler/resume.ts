// Supervised resume: what re-opens a NeedsReview task — a person's request (handled once, by its token) or
// the task's auto-resume policy after a cooldown — and the audit trail of every such decision. Pure: the
// clock and the caps come in as inputs, like everything in the reconciler.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { clip, EPISODE_MESSAGE_MAX } from '../api/bounds.ts';
import { AUDIT_KEEP, ResumeStatusSchema, canResume } from '../api/resume.ts';
import type { AuditEntry, ResumeRequest, ResumeStatus } from '../api/resume.ts';
import { reopenBreaker } from './breaker.ts';
import { normal, warning } from './actions.ts';
import type { Events } from './actions.ts';

/** A cap the task would hit before its next episode (reconcile.ts capReached). */
export type CapCheck = (status: AgentTaskStatus) => { reason: string; message: string } | undefined;

export interface ResumeContext {
  spec: AgentTaskSpec;
  request?: ResumeRequest;
  /** The phase on record before this pass: a request resumes only a stop that was on record when it came. */
  recordedPhase?: AgentTaskStatus['phase'];
  now: Date;
  capFor: CapCheck;
}

/** Why the policy may not resume a task, or what a resume grants. */
export type AutoResumeVerdict = { allowed: true; grant: number } | { allowed: false; check: string; message: string };

/**
 * The policy's checks, in order; the first that fails is the one reported. The cooldown is not among them:
 * an allowed resume is scheduled cooldownSeconds ahead and checked again when it is due.
 */
export function autoResumeVerdict(status: AgentTaskStatus, spec: AgentTaskSpec, capFor: CapCheck): AutoResumeVerdict {
  const { policy, maxAutoResumes, grantEpisodes } = spec.resume;
  const resume = resumeOf(status);
  const reason = status.reason ?? '';
  const trippedBy = status.breaker?.trippedBy;
  if (policy === 'Manual')
    return { allowed: false, check: 'policy', message: 'policy Manual: only a person resumes this task' };
  const resumable =
    reason === 'CircuitOpen'
      ? trippedBy === 'noProgress' || (policy === 'Aggressive' && trippedBy === 'sameError')
      : reason === 'MaxEpisodesReached' && policy === 'Aggressive';
  if (!resumable) {
    const what = reason === 'CircuitOpen' ? `CircuitOpen (${trippedBy ?? 'unknown rule'})` : reason || 'this stop';
    return { allowed: false, check: 'reason', message: `policy ${policy} does not resume ${what}` };
  }
  const grant = reason === 'MaxEpisodesReached' ? grantEpisodes : 0;
  const cap = capFor(resumed(status, grant, 'check', ''));
  if (cap) return { allowed: false, check: 'budget', message: `resuming would stop again at once: ${cap.message}` };
  if (resume.autoResumes >= maxAutoResumes) {
    return {
      allowed: false,
      check: 'maxAutoResumes',
      message: `auto-resumed ${resume.autoResumes} times (maxAutoResumes ${maxAutoResumes}); a person decides now`,
    };
  }
  // Conservative trusts a task only while it shows progress: never since its last resume (or ever) → a person looks.
  if (policy === 'Conservative' && reason === 'CircuitOpen') {
    const progress = status.breaker?.lastProgressAt;
    const since = resume.lastResumeAt;
    if (!progress || (since && Date.parse(progress) <= Date.parse(since))) {
      const when = since ? `since its last resume at ${since}` : 'in any episode';
      return { allowed: false, check: 'noProgressSinceResume', message: `policy Conservative: no progress ${when}` };
    }
  }
  return { allowed: true, grant };
}

/** A status and the events that say how it came about. */
export interface Reviewed {
  status: AgentTaskStatus;
  events: Events;
  requeueAfterMs?: number;
}

/**
 * Before the reconciler's terminal check: a new request is handled (and its token recorded), and a due
 * auto-resume re-opens the task. A re-opened task comes back Pending and goes on to its next episode.
 */
export function applyResume(prev: AgentTaskStatus, ctx: ResumeContext): Reviewed {
  const req = ctx.request;
  if (req && req.token !== prev.resume?.handledToken) return handleRequest(prev, req, ctx);
  const at = ctx.now.toISOString();
  const status = prev;
  const due = status.resume?.nextAutoResumeAt;
  if (status.phase !== 'NeedsReview' || !due || Date.parse(due) > ctx.now.getTime()) return { status, events: [] };
  // Checked again when due: a budget or a count may have changed during the cooldown.
  const verdict = autoResumeVerdict(status, ctx.spec, ctx.capFor);
  if (!verdict.allowed)
    return { status: { ...status, resume: { ...resumeOf(status), nextAutoResumeAt: undefined } }, events: [] };
  const by = `policy:${ctx.spec.resume.policy}`;
  const next = resumed(status, verdict.grant, by, at);
  const count = resumeOf(next).autoResumes + 1;
  const counted = { ...next, resume: { ...resumeOf(next), autoResumes: count } };
  const message = `${counted.message} (auto-resume ${count} of ${ctx.spec.resume.maxAutoResumes})`;
  return {
    status: audit({ ...counted, message }, { at, action: 'Resumed', by, reason: prev.reason, message }),
    events: [normal('AutoResumed', message)],
  };
}

/** A person's request, seen for the first time: rejected, ignored (nothing to resume) or the task resumed. */
function handleRequest(prev: AgentTaskStatus, req: ResumeRequest, ctx: ResumeContext): Reviewed {
  const at = ctx.now.toISOString();
  const status = { ...prev, resume: { ...resumeOf(prev), handledToken: req.token } };
  const by = `user:${req.by}`;
  if (req.error) {
    return {
      status: audit(status, { at, action: 'ResumeRejected', by, message: req.error, token: req.token }),
      events: [warning('ResumeRejected', `resume request ${req.token} rejected: ${req.error}`)],
    };
  }
  if (!canResume(status.phase) || !canResume(ctx.recordedPhase)) {
    const message = `task is ${(canResume(status.phase) ? ctx.recordedPhase : status.phase) ?? 'Pending'}: nothing to resume`;
    return {
      status: audit(status, { at, action: 'ResumeIgnored', by, reason: status.reason, message, token: req.token }),
      events: [normal('ResumeIgnored', `resume request ${req.token}: ${message}`)],
    };
  }
  const grant = req.episodes ?? (status.reason === 'MaxEpisodesReached' ? ctx.spec.resume.grantEpisodes : 0);
  const next = resumed(status, grant, by, at, req.token);
  const cap = ctx.capFor(next);
  if (cap) {
    const message = `resuming would stop again at once: ${cap.message}${cap.reason === 'MaxEpisodesReached' ? ' (grant more with --episodes)' : ' (raise the limit in the spec)'}`;
    return {
      status: audit(status, { at, action: 'ResumeRejected', by, reason: status.reason, message, token: req.token }),
      events: [warning('ResumeRejected', message)],
    };
  }
  // A person looked: the policy's count starts over.
  const fresh = { ...next, resume: { ...resumeOf(next), autoResumes: 0 } };
  const message = fresh.message as string;
  return {
    status: audit(fresh, { at, action: 'Resumed', by, reason: prev.reason, message, token: req.token }),
    events: [normal('Resumed', message)],
  };
}

/**
 * After the decision, for a task left in NeedsReview: the stop goes into the audit trail, and the policy
 * either schedules an auto-resume (requeue at its time) or says once which check holds the task.
 */
export function superviseReview(
  prevPhase: AgentTaskStatus['phase'],
  prevReason: string | undefined,
  status: AgentTaskStatus,
  ctx: ResumeContext,
): Reviewed {
  if (status.phase !== 'NeedsReview' || status.currentEpisode) return { status, events: [] };
  const at = ctx.now.toISOString();
  const nowMs = ctx.now.getTime();
  let next = status;
  if (prevPhase !== 'NeedsReview' || prevReason !== status.reason) {
    next = audit(next, {
      at,
      action: 'Stopped',
      by: 'controller',
      reason: status.reason,
      message: status.message ?? '',
    });
    next = { ...next, resume: { ...resumeOf(next), heldBy: undefined, nextAutoResumeAt: undefined } };
  }
  const scheduled = next.resume?.nextAutoResumeAt;
  if (scheduled) return { status: next, events: [], requeueAfterMs: Math.max(0, Date.parse(scheduled) - nowMs) };

  const verdict = autoResumeVerdict(next, ctx.spec, ctx.capFor);
  const policy = ctx.spec.resume.policy;
  if (!verdict.allowed) {
    if (next.resume?.heldBy === verdict.check) return { status: next, events: [] };
    next = { ...next, resume: { ...resumeOf(next), heldBy: verdict.check } };
    return {
      status: audit(next, {
        at,
        action: 'AutoResumeHeld',
        by: `policy:${policy}`,
        reason: verdict.check,
        message: verdict.message,
      }),
      events: [normal('AutoResumeHeld', verdict.message)],
    };
  }
  const delayMs = Math.round(ctx.spec.resume.cooldownSeconds * 1000);
  const when = new Date(nowMs + delayMs).toISOString();
  const message = `auto-resume at ${when} (policy ${policy}, ${resumeOf(next).autoResumes + 1} of ${ctx.spec.resume.maxAutoResumes})`;
  next = {
    ...next,
    message: `${next.message ?? ''}; ${message}`,
    resume: { ...resumeOf(next), nextAutoResumeAt: when, heldBy: undefined },
  };
  return {
    status: audit(next, { at, action: 'AutoResumeScheduled', by: `policy:${policy}`, reason: status.reason, message }),
    events: [normal('AutoResumeScheduled', message)],
    requeueAfterMs: delayMs,
  };
}

/** Stopped for review with an auto-resume scheduled: not finished yet, for `episodic run` and for dependents. */
export function awaitingAutoResume(status: AgentTaskStatus | undefined): boolean {
  return status?.phase === 'NeedsReview' && status.resume?.nextAutoResumeAt !== undefined;
}

/** The spec was edited: a person looked, so the policy's count starts over and nothing stays scheduled. */
export function resumeOnReopen(resume: ResumeStatus | undefined): ResumeStatus | undefined {
  return resume && { ...resume, autoResumes: 0, nextAutoResumeAt: undefined, heldBy: undefined };
}

/** The task re-opened: Pending, granted episodes added, an open breaker on trial (HalfOpen). */
function resumed(status: AgentTaskStatus, grant: number, by: string, at: string, token?: string): AgentTaskStatus {
  const resume = resumeOf(status);
  const breaker = reopenBreaker(status.breaker);
  const grantWords = grant > 0 ? `; ${grant} more episodes granted` : '';
  const who = token ? `${by} (request ${token})` : by;
  return {
    ...status,
    phase: 'Pending',
    reason: 'Resumed',
    message: `resumed from ${status.reason ?? 'NeedsReview'} by ${who}${breaker?.state === 'HalfOpen' ? '; circuit breaker HalfOpen' : ''}${grantWords}`,
    consecutiveFailures: 0,
    nextEpisodeAt: undefined,
    breaker,
    resume: {
      ...resume,
      grantedEpisodes: resume.grantedEpisodes + grant,
      lastResumeAt: at,
      lastResumeBy: by,
      nextAutoResumeAt: undefined,
      heldBy: undefined,
    },
  };
}

function resumeOf(status: AgentTaskStatus): ResumeStatus {
  return status.resume ?? ResumeStatusSchema.parse({});
}

export function audit(status: AgentTaskStatus, entry: AuditEntry): AgentTaskStatus {
  const bounded = {
    ...entry,
    message: clip(entry.message, EPISODE_MESSAGE_MAX),
  };
  return { ...status, audit: [...(status.audit ?? []), bounded].slice(-AUDIT_KEEP) };
}
