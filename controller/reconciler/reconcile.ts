// The reconciler: a pure function of (task, observed episode, clock) → (actions, next status, requeue-after).
// No I/O, no Date.now(), no Math.random(): everything it needs comes in as input, so every rule is
// table-testable and local and cluster mode share it unchanged. The actions come in the order the loop
// carries them out (pass-actions.ts).
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { clip, STATUS_MESSAGE_MAX } from '../api/bounds.ts';
import { effectiveSpec } from '../api/steps.ts';
import { reviewCount } from '../api/review.ts';
import type { Action, Events } from './actions.ts';
import { tallyEvidence } from './attempts.ts';
import { QUEUED } from './before-start.ts';
import { conditionsFor } from './conditions.ts';
import { decide, resumeContext } from './decide-next.ts';
import { judgeGates } from './gates.ts';
import { applyEpisodeOps, opsToApply, settleOps } from './ops.ts';
import { recordOutputs } from './outputs.ts';
import { observedEpisode, passActions } from './pass-actions.ts';
import { adoptUnknownEpisode, endedEpisode } from './record-episode.ts';
import { superviseReview } from './resume.ts';
import { foldReview, reviewEvents } from './review.ts';
import { recordScoped, skipStep } from './skip-scope.ts';
import { syncStack } from './stack.ts';
import { advanceStep, chargeStep, mirrorStep, nameStepInEvents } from './steps.ts';
import { auditHold } from './suspend.ts';
import type { ObservedEpisode, ReconcileInput, ReconcileResult } from './types.ts';
import { childrenAsWritten } from './credentials-choice.ts';

export { DEADLINE_GRACE_MS, USAGE_LIMIT_FALLBACK_MS } from './types.ts';

export type { Action, StopReason } from './actions.ts';
export type { ObservedEpisode, ReconcileInput, ReconcileResult } from './types.ts';

export function reconcile(given: ReconcileInput): ReconcileResult {
  if (releasedAsIs(given)) return { status: given.status, actions: [RELEASE], keepsStatus: true, ...UNMOVED };
  const input = { ...given, episode: observedEpisode(given.episode, given.startToRetry) };
  const now = input.now.toISOString();
  const events: Events = [];
  let status: AgentTaskStatus = structuredClone(input.status);

  status = adoptUnknownEpisode(status, input.episode, now);
  status = settleOps(status, input.opsApplied, input.opsRefused, input.spec);
  const ended = endedEpisode(input.episode, input.stopRequested, input.deleted);
  let endReason: string | undefined;
  if (ended && status.currentEpisode?.number === ended.number) {
    // Judged by the rules of the step it ran in; a met completion rule may move the task to the next step.
    // A step skipped by its skipWhen goes on to the next one without an agent episode (skip-scope.ts).
    const skipped = input.spec && skipStep(status, input.spec, ended, input.now);
    const stepInput = input.spec ? { ...input, spec: effectiveSpec(input.spec, status) } : input;
    const recorded = skipped ?? recordScoped(status, ended, stepInput);
    // A step with gates is done only once they pass (gates.ts); a failing check starts fix episodes.
    const gated = skipped ?? judgeGates(status, recorded.status, ended.result, input.spec);
    // What the episode published is the task's and its step's before the step may end (outputs.ts).
    const advanced =
      skipped ?? advanceStep(recordOutputs(chargeStep(status, gated.status), ended.result), input.spec, input.now);
    status = advanced.status;
    events.push(...(skipped ? [] : [...recorded.events, ...gated.events]), ...advanced.events);
    const ops = applyEpisodeOps(status, ended, input.spec, input.now);
    status = ops.status;
    events.push(...ops.events);
    status = withReviewFacts(status, given.episode ?? ended, ended.number);
    status = tallyEvidence(status, ended.result);
    endReason = status.reason;
  }

  const held = auditHold(status, input.hold, input.spec?.suspend ?? false, input.now);
  status = held.status;
  events.push(...held.events);
  const decided = decide(status, input);
  status = syncStack(decided.status, input.spec);
  const applyOps = opsToApply(status, input);
  events.push(...(decided.events ?? []));
  let requeueAfterMs = decided.requeueAfterMs;
  if (input.spec) {
    const review = superviseReview(input.status.phase, input.status.reason, status, resumeContext(input.spec, input));
    status = review.status;
    events.push(...review.events);
    requeueAfterMs = review.requeueAfterMs ?? requeueAfterMs;
  }
  // The step shows how the pass left the task; an invalid spec is no step's doing, so its message is the task's.
  const unnamed = status.message;
  status = mirrorStep(status, input.now, input.spec !== undefined);
  const named = nameStepInEvents(events, unnamed, status.message);
  named.push(...reviewEvents(input.status.phase, status, input.spec?.progress.checklist));
  // Messages carry user input (a spec error quotes the spec): bounded here, whatever made them.
  if (status.message) status.message = clip(status.message, STATUS_MESSAGE_MAX);
  status.observedGeneration = input.generation;
  status.conditions = conditionsFor(status, input.generation, now);
  const pass = passActions({
    ...input,
    before: input.status,
    status,
    events: named,
    decided: [...applyOps, ...decided.actions],
    endReason,
  });
  return {
    status,
    // A deleted task whose episode this pass ended (or never started) is let go once that is on record.
    actions: childrenAsWritten(
      input.deleted && !status.currentEpisode ? [...pass.actions, RELEASE] : pass.actions,
      input.credentials,
    ),
    // Ops being applied: look again at once, to record that they were and go on.
    requeueAfterMs: earliest(requeueAfterMs, input.episode?.recheckAfterMs, applyOps.length > 0 ? 0 : undefined),
    heldByBudgets: decided.heldByBudgets,
    wakeDependents: pass.ended || input.status.phase !== status.phase,
    waitsForSlot: status.reason === QUEUED,
  };
}

const RELEASE: Action = { type: 'ReleaseTask' };
const UNMOVED = { wakeDependents: false, waitsForSlot: false } as const;

/** A deleted task with no episode on record nor running: nothing is left to record, so it goes as it is. */
function releasedAsIs(input: ReconcileInput): boolean {
  return input.deleted === true && !input.status.currentEpisode && input.episode?.state !== 'running';
}

/** What needs a person, from the ended episode's evidence as observed (a stop's result keeps no evidence). */
function withReviewFacts(status: AgentTaskStatus, observed: ObservedEpisode, number: number): AgentTaskStatus {
  const facts = observed.number === number ? observed.result?.evidence?.review : undefined;
  const review = facts ? foldReview(status.review, facts, number) : undefined;
  // A task that never had anything to review carries no status.review at all.
  return review && (status.review || reviewCount(review) > 0) ? { ...status, review } : status;
}

function earliest(...delays: Array<number | undefined>): number | undefined {
  const set = delays.filter((d): d is number => d !== undefined);
  return set.length > 0 ? Math.min(...set) : undefined;
}
