// Nothing runs and the task is not finished: what keeps the next episode from starting (a dependency, a cap,
// a hold, a backoff, no free slot, ops to apply first), or its start. Pure, as reconcile() is.
import type { AgentTaskSpec, AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { episodeNumbersUsed } from '../api/agent-task.ts';
import { gatewayCredentials } from '../api/agent-credentials.ts';
import { totalTokens } from '../api/bounds.ts';
import type { EpisodeLeash } from '../api/episode-leash.ts';
import type { Action, Events } from './actions.ts';
import { normal, warning } from './actions.ts';
import { BUDGET_HOLD_REASONS, budgetHold, judgeBudgets } from './budget.ts';
import { credentialsConflictHold, credentialsUsed, stepNamesCredentials } from './credentials-choice.ts';
import { credentialsHold } from './credentials-hold.ts';
import { cycleMessage, judgeDependencies } from './dependencies.ts';
import { fanOutDecision } from './fan-out-decide.ts';
import { readsMailbox } from './mail.ts';
import { spendCapReached, episodeLeash } from './spend-cap.ts';
import { spawnHold, withDelivery } from './spawn-decide.ts';
import { countedEpisodes, startStepEpisode, stepRecord } from './steps.ts';
import { DEADLINE_GRACE_MS } from './types.ts';
import type { ReconcileInput } from './types.ts';

/** The reason of a task waiting for a free episode slot (ReconcileResult.waitsForSlot). */
export const QUEUED = 'Queued';

export interface Decision {
  status: AgentTaskStatus;
  /** Stops, or a start followed by the event that announces it. */
  actions: Action[];
  events?: Events;
  requeueAfterMs?: number;
  heldByBudgets?: string[];
}

export function withPhase(status: AgentTaskStatus, phase: Phase, reason: string, message: string): AgentTaskStatus {
  return { ...status, phase, reason, message };
}

/** Nothing runs and the task is not finished: whatever keeps the next episode from starting, or its start. */
export function beforeStart(given: AgentTaskStatus, spec: AgentTaskSpec, input: ReconcileInput): Decision {
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
  const choice = input.spec && stepNamesCredentials(input.spec, status) ? undefined : input.credentials;
  const credentials = credentialsUsed(gatewayCredentials(spec), choice);
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
export function capReached(
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
export function episodeWords(status: AgentTaskStatus, number: number, maxEpisodes: number): string {
  const rec = stepRecord(status);
  if (!rec || !status.step) return `${number}/${maxEpisodes}`;
  if (rec.gate)
    return `${number} (step ${status.step.summary}: fix episode ${rec.gate.fixEpisodes + 1} for gate ${rec.gate.name})`;
  return `${number} (step ${status.step.summary}: ${rec.episodes}/${maxEpisodes})`;
}
