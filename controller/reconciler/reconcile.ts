// The reconciler: a pure function of (task, observed episode, clock) → (actions, next status, requeue-after).
// No I/O, no Date.now(), no Math.random(): everything it needs comes in as input, so every rule is
// table-testable and local and cluster mode share it unchanged. The actions come in the order the loop
// carries them out (pass-actions.ts).
import type { AgentTaskSpec, AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { episodeNumbersUsed, isTerminal } from '../api/agent-task.ts';
import { clip, STATUS_MESSAGE_MAX, totalTokens } from '../api/bounds.ts';
import { effectiveSpec } from '../api/steps.ts';
import { reopenBreaker } from './breaker.ts';
import { spendCapReached, episodeLeash } from './spend-cap.ts';
import type { EpisodeLeash } from '../api/episode-leash.ts';
import { BUDGET_HOLD_REASONS, budgetHold, judgeBudgets } from './budget.ts';
import { conditionsFor } from './conditions.ts';
import { judgeGates } from './gates.ts';
import { cycleMessage, judgeDependencies } from './dependencies.ts';
import { recordOutputs } from './outputs.ts';
import { observedEpisode, passActions } from './pass-actions.ts';
import { adoptUnknownEpisode, endedEpisode } from './record-episode.ts';
import { applyEpisodeOps, opsToApply, settleOps } from './ops.ts';
import { applyResume, resumeOnReopen, superviseReview } from './resume.ts';
import { recordScoped, skipStep } from './skip-scope.ts';
import { auditHold, suspendedBecause } from './suspend.ts';
import { syncStack } from './stack.ts';
import {
  advanceStep,
  chargeStep,
  countedEpisodes,
  mirrorStep,
  nameStepInEvents,
  startStepEpisode,
  stepRecord,
  syncSteps,
} from './steps.ts';
import { reviewCount } from '../api/review.ts';
import { foldReview, reviewEvents } from './review.ts';
import { normal, warning } from './actions.ts';
import { DEADLINE_GRACE_MS } from './types.ts';
import type { Action, Events, StopReason } from './actions.ts';
import type { ObservedEpisode, ReconcileInput, ReconcileResult } from './types.ts';
import { readsMailbox } from './mail.ts';
import { MAILBOX_RESYNC_MS, spawnHold, spawnInterrupt, withDelivery } from './spawn-decide.ts';
import { fanOutDecision } from './fan-out-decide.ts';
import { tallyEvidence } from './attempts.ts';
import { credentialsHold } from './credentials-hold.ts';
import { credentialsConflictHold, credentialsUsed } from './credentials-choice.ts';
import { gatewayCredentials } from '../api/agent-credentials.ts';

export { DEADLINE_GRACE_MS, USAGE_LIMIT_FALLBACK_MS } from './types.ts';

const QUEUED = 'Queued';
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
    actions: input.deleted && !status.currentEpisode ? [...pass.actions, RELEASE] : pass.actions,
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

function resumeContext(spec: AgentTaskSpec, input: ReconcileInput) {
  return {
    spec,
    request: input.resumeRequest,
    recordedPhase: input.status.phase,
    now: input.now,
    capFor: (s: AgentTaskStatus) => capReached(s, effectiveSpec(spec, s), input.globalBudget),
  };
}

interface Decision {
  status: AgentTaskStatus;
  /** Stops, or a start followed by the event that announces it. */
  actions: Action[];
  events?: Events;
  requeueAfterMs?: number;
  heldByBudgets?: string[];
}

function withPhase(status: AgentTaskStatus, phase: Phase, reason: string, message: string): AgentTaskStatus {
  return { ...status, phase, reason, message };
}

/** What to do next, given a status that already accounts for every finished episode. */
function decide(prev: AgentTaskStatus, input: ReconcileInput): Decision {
  if (input.deleted) return { status: prev, actions: stopRunning(prev, 'deleted') };
  if (input.shuttingDown && prev.currentEpisode) return { status: prev, actions: stopRunning(prev, 'cancelled') };
  const reopened = reopen(prev, input.generation);
  // A pipeline's steps follow the spec while no episode runs (a running one finishes in its step first).
  const synced =
    input.spec && !reopened.status.currentEpisode
      ? syncSteps(reopened.status, input.spec, input.generation)
      : { status: reopened.status, events: [] };
  const next = decideBySpec(synced.status, input);
  return { ...next, events: [...reopened.events, ...synced.events, ...(next.events ?? [])] };
}

function stopRunning(status: AgentTaskStatus, reason: StopReason): Action[] {
  const running = status.currentEpisode;
  return running ? [{ type: 'StopEpisode', number: running.number, reason }] : [];
}

/** An invalid or suspended spec stops everything; a resume may re-open the task; then the episode runs or may start. */
function decideBySpec(prev: AgentTaskStatus, input: ReconcileInput): Decision {
  const spec = input.spec;
  const running = prev.currentEpisode;
  if (!spec) {
    const message = `invalid spec: ${input.specError ?? 'unknown error'}`;
    return { status: withPhase(prev, 'Failed', 'InvalidSpec', message), actions: stopRunning(prev, 'cancelled') };
  }
  const suspended = suspendedBecause(spec, input.hold);
  if (suspended) {
    const message = running ? `stopping episode ${running.number}: task ${suspended}` : `task is ${suspended}`;
    return { status: withPhase(prev, 'Suspended', 'Suspended', message), actions: stopRunning(prev, 'cancelled') };
  }
  // A person's resume request, or an auto-resume that is due, re-opens a NeedsReview task (resume.ts).
  const resumed = input.shuttingDown ? { status: prev, events: [] } : applyResume(prev, resumeContext(spec, input));
  const status = resumed.status;
  // In a pipeline, the current step's prompt, agent, completion and limits.
  const current = effectiveSpec(spec, status);
  let next: Decision;
  if (running) next = whileRunning(status, running, current, input);
  else if (isTerminal(status.phase)) next = { status, actions: [] };
  else next = beforeStart(status, current, input);
  return { ...next, events: [...resumed.events, ...(next.events ?? [])] };
}

/** An edited spec re-opens a finished task. Counters that enforce caps (episodes, cost) stay cumulative. */
function reopen(status: AgentTaskStatus, generation: number): { status: AgentTaskStatus; events: Events } {
  if (!isTerminal(status.phase) || status.observedGeneration === undefined || status.observedGeneration === generation)
    return { status, events: [] };
  // A new run: its evidence starts over, and an open breaker gets a trial (reopenBreaker).
  const breaker = reopenBreaker(status.breaker);
  return {
    status: {
      ...withPhase(status, 'Pending', 'SpecChanged', 'spec changed; task re-opened'),
      consecutiveFailures: 0,
      consecutiveRetries: 0,
      nextEpisodeAt: undefined,
      workspaceChanges: 0,
      testOnlyEpisodes: undefined,
      breaker,
      resume: resumeOnReopen(status.resume),
      stack: undefined, // a stack task starts over with spec.stack
    },
    events: [normal('TaskReopened', 'spec changed; task re-opened')],
  };
}

type CurrentEpisode = NonNullable<AgentTaskStatus['currentEpisode']>;

/** The episode on record runs: it may not be schedulable, or be past its deadline. */
function whileRunning(
  prev: AgentTaskStatus,
  running: CurrentEpisode,
  spec: AgentTaskSpec,
  input: ReconcileInput,
): Decision {
  let status = prev;
  const observed = input.episode?.number === running.number ? input.episode : undefined;
  if (observed?.podName) status = { ...status, currentEpisode: { ...running, podName: observed.podName } };
  if (observed?.unschedulable)
    return { status: withPhase(status, 'Waiting', 'Unschedulable', observed.unschedulable), actions: [] };
  // The clock runs from when the episode really started (a pod may wait to be scheduled first).
  const startedAt = Math.max(Date.parse(running.startedAt), Date.parse(observed?.startedAt ?? '') || 0);
  const deadline = startedAt + spec.limits.episodeTimeoutSeconds * 1000 + DEADLINE_GRACE_MS;
  const nowMs = input.now.getTime();
  if (nowMs >= deadline)
    return { status, actions: [{ type: 'StopEpisode', number: running.number, reason: 'timeout' }] };
  const interrupted = spawnInterrupt(status, running.number, spec, input.spawn);
  if (interrupted) return { status, actions: [{ type: 'StopEpisode', number: running.number, reason: 'cancelled' }] };
  const message = `episode ${episodeWords(status, running.number, spec.limits.maxEpisodes)} running`;
  return {
    status: withPhase(status, 'Running', 'EpisodeRunning', message),
    actions: [],
    // With interrupt, arrivals come as events; the resync is the safety net for a lost one.
    requeueAfterMs: spec.interrupt && input.spawn ? Math.min(deadline - nowMs, MAILBOX_RESYNC_MS) : deadline - nowMs,
  };
}

/** Nothing runs and the task is not finished: whatever keeps the next episode from starting, or its start. */
function beforeStart(given: AgentTaskStatus, spec: AgentTaskSpec, input: ReconcileInput): Decision {
  let status = given;
  const set = (phase: Phase, reason: string, message: string) => withPhase(status, phase, reason, message);
  if (input.dependencyCycle) {
    return {
      status: set('Failed', 'InvalidSpec', cycleMessage(input.dependencyCycle)),
      actions: [],
    };
  }
  const deps = judgeDependencies(spec.dependsOn, input.dependencies);
  if (deps.kind === 'failed') {
    const message = `dependency ${deps.failed.join(', ')} did not succeed`;
    return {
      status: set('Skipped', 'DependencyFailed', message),
      actions: [],
      events: [warning('TaskSkipped', message)],
    };
  }
  if (deps.kind === 'pending') {
    return { status: set('Waiting', 'DependenciesPending', `waiting for ${deps.waitingOn.join(', ')}`), actions: [] };
  }
  // A forEach step runs children instead of an episode (fan-out.ts).
  const fanOut = fanOutDecision(status, input);
  if (fanOut) return fanOut;
  const cap = capReached(status, spec, input.globalBudget);
  if (cap) {
    const event = warning(cap.reason !== 'MaxEpisodesReached' ? 'BudgetExceeded' : 'MaxEpisodesReached', cap.message);
    return {
      status: { ...set('NeedsReview', cap.reason, cap.message), nextEpisodeAt: undefined },
      actions: [],
      events: [event],
    };
  }
  const held = spawnHold(status, spec, input.spawn);
  if (held) return { status: set(held.phase, held.reason, held.message), actions: [], requeueAfterMs: held.recheckMs };
  // Two namespace defaults: no pick, the task waits until one is left (credentials-choice.ts).
  const conflict = credentialsConflictHold(status, input.credentials);
  if (conflict) return { ...conflict, actions: [] };
  // No episode starts into a pool whose every credential is at a usage limit (credentials-hold.ts).
  const paused = gatewayCredentials(spec) ? input.credentialsPaused : undefined;
  const pool = credentialsHold(status, paused, input.now, input.jitter);
  if (pool.kind === 'hold') return { ...pool, actions: [] };
  status = pool.status;
  const nowMs = input.now.getTime();
  const nextAt = status.nextEpisodeAt ? Date.parse(status.nextEpisodeAt) : NaN;
  // A budget's hold is decided afresh every pass (a raised limit frees it at once); a backoff is not.
  if (nextAt > nowMs && !BUDGET_HOLD_REASONS.includes(status.reason ?? '')) {
    const waiting =
      status.phase === 'Waiting' ? status : set('Waiting', 'Backoff', `next episode at ${status.nextEpisodeAt}`);
    return { status: waiting, actions: [], requeueAfterMs: nextAt - nowMs };
  }
  if (input.shuttingDown) {
    const message = 'the controller stopped; the next episode starts when it runs again';
    return { status: set('Pending', 'ControllerStopped', message), actions: [] };
  }
  const budget = input.budgets?.length ? judgeBudgets(input.budgets, status, input.now) : undefined;
  if (budget && budget.kind !== 'go') return budgetHold(status, budget, input.now);
  if (input.freeSlots <= 0) {
    return { status: set('Pending', QUEUED, 'waiting for a free episode slot (--max-concurrent)'), actions: [] };
  }
  // The next episode sees what the last one's ops did (a blackboard value, a child): they are applied first.
  if (status.pendingOps) {
    const message = `applying the ops of episode ${status.pendingOps.episode}`;
    return { status: set('Pending', 'ApplyingOps', message), actions: [] };
  }
  // A step or frame that came up in this pass reads the mailbox this pass did not read: the next pass does.
  if (input.spawn?.mailboxUnread && readsMailbox(input.spec, status)) {
    const message = 'reading the mailbox for the next episode';
    return { status: set('Pending', 'ReadingMailbox', message), actions: [], requeueAfterMs: 0 };
  }
  // Only an agent behind the gateway is held to its leash request by request.
  const leash = gatewayCredentials(spec)
    ? episodeLeash(status, spec.limits, input.budgets, input.spawn?.caps, input.now)
    : undefined;
  const delivered = withDelivery(status, episodeNumbersUsed(status) + 1, input.spawn);
  const credentials = credentialsUsed(gatewayCredentials(spec), input.credentials);
  return start({ ...delivered, credentials }, spec, input.now, leash);
}

/** The next episode: on record as running, then started, then announced. */
function start(status: AgentTaskStatus, spec: AgentTaskSpec, now: Date, leash?: EpisodeLeash): Decision {
  const number = episodeNumbersUsed(status) + 1;
  const counted = startStepEpisode(status, now);
  const words = episodeWords(counted, number, spec.limits.maxEpisodes);
  const started = normal('EpisodeStarted', `episode ${words} started`);
  return {
    status: {
      ...withPhase(counted, 'Running', 'EpisodeRunning', `episode ${words} running`),
      episodes: status.episodes + 1,
      currentEpisode: { number, startedAt: now.toISOString() },
      nextEpisodeAt: undefined,
    },
    actions: [
      leash ? { type: 'StartEpisode', number, leash } : { type: 'StartEpisode', number },
      { ...started, details: { episode: number }, afterStart: true },
    ],
    requeueAfterMs: spec.limits.episodeTimeoutSeconds * 1000 + DEADLINE_GRACE_MS,
  };
}

/** Caps are checked before every start: once reached, no episode starts. */
function capReached(
  status: AgentTaskStatus,
  spec: AgentTaskSpec,
  global: ReconcileInput['globalBudget'],
): { reason: string; message: string } | undefined {
  const { maxEpisodes } = spec.limits;
  const spent = spendCapReached({ costUSD: status.costUSD, tokens: totalTokens(status.tokens) }, spec.limits);
  if (spent) return { reason: 'BudgetExceeded', message: spent };
  const allSpent = global ? global.othersSpentUSD + status.costUSD : 0;
  if (global && allSpent >= global.limitUSD) {
    return {
      reason: 'GlobalBudgetExceeded',
      message: `all tasks together spent $${allSpent.toFixed(4)} of --budget-usd $${global.limitUSD}`,
    };
  }
  // Transient errors and usage limits say nothing about the agent's work: an outage never spends maxEpisodes.
  // Resumes grant episodes in status (the spec is the user's): they add to the cap. A pipeline counts per step.
  const { counted, granted } = countedEpisodes(status);
  // Fix episodes of a failed gate are bounded by its maxFixEpisodes instead (gates.ts).
  if (counted >= maxEpisodes + granted && !stepRecord(status)?.gate) {
    const cap = granted > 0 ? `maxEpisodes ${maxEpisodes} + ${granted} granted` : `maxEpisodes ${maxEpisodes}`;
    return { reason: 'MaxEpisodesReached', message: `${counted} episodes without finishing the task (${cap})` };
  }
  return undefined;
}

/** "3/20", or in a pipeline "7 (step 2/4 implement: 3/20)": the step's own count against its maxEpisodes. */
function episodeWords(status: AgentTaskStatus, number: number, maxEpisodes: number): string {
  const rec = stepRecord(status);
  if (!rec || !status.step) return `${number}/${maxEpisodes}`;
  if (rec.gate)
    return `${number} (step ${status.step.summary}: fix episode ${rec.gate.fixEpisodes + 1} for gate ${rec.gate.name})`;
  return `${number} (step ${status.step.summary}: ${rec.episodes}/${maxEpisodes})`;
}
