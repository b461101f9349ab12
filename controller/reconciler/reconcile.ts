// The reconciler: a pure function of (task, observed episode, clock) → (actions, next status, requeue-after).
// No I/O, no Date.now(), no Math.random(): everything it needs comes in as input, so every rule is
// table-testable and local and cluster mode share it unchanged.
import type { AgentTaskSpec, AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { isTerminal } from '../api/agent-task.ts';
import { BUDGET_HOLD_REASONS, budgetHold, judgeBudgets } from './budget.ts';
import { conditionsFor } from './conditions.ts';
import { judgeDependencies } from './dependencies.ts';
import { adoptUnknownEpisode, endedEpisode, recordEpisode } from './record-episode.ts';
import { applyResume, resumeOnReopen, superviseReview } from './resume.ts';
import { DEADLINE_GRACE_MS, normal, warning } from './types.ts';
import type { Action, Events, ReconcileInput, ReconcileResult, StopReason } from './types.ts';

export { DEADLINE_GRACE_MS, USAGE_LIMIT_FALLBACK_MS } from './types.ts';

const STATUS_MESSAGE_MAX = 2000;
export type { Action, ObservedEpisode, ReconcileInput, ReconcileResult, StopReason } from './types.ts';

export function reconcile(input: ReconcileInput): ReconcileResult {
  const now = input.now.toISOString();
  const events: Events = [];
  const actions: Action[] = [];
  let status: AgentTaskStatus = structuredClone(input.status);

  status = adoptUnknownEpisode(status, input.episode, now);
  const ended = endedEpisode(input.episode, input.stopRequested);
  if (ended && status.currentEpisode?.number === ended.number) {
    status = recordEpisode(status, ended, input, events);
  }

  const decided = decide(status, input, events);
  status = decided.status;
  let requeueAfterMs = decided.requeueAfterMs;
  if (input.spec) {
    const review = superviseReview(
      input.status.phase,
      input.status.reason,
      status,
      resumeContext(input.spec, input),
      events,
    );
    status = review.status;
    requeueAfterMs = review.requeueAfterMs ?? requeueAfterMs;
  }
  actions.push(...events, ...decided.actions);
  // Messages carry user input (a spec error quotes the spec): bounded here, whatever made them.
  if (status.message && status.message.length > STATUS_MESSAGE_MAX)
    status.message = `${status.message.slice(0, STATUS_MESSAGE_MAX - 1)}…`;
  status.observedGeneration = input.generation;
  status.conditions = conditionsFor(status, input.generation, now);
  return { status, actions, requeueAfterMs, heldByBudgets: decided.heldByBudgets };
}

function resumeContext(spec: AgentTaskSpec, input: ReconcileInput) {
  return {
    spec,
    request: input.resumeRequest,
    recordedPhase: input.status.phase,
    now: input.now,
    capFor: (s: AgentTaskStatus) => capReached(s, spec, input.globalBudget),
  };
}

interface Decision {
  status: AgentTaskStatus;
  actions: Action[];
  requeueAfterMs?: number;
  heldByBudgets?: string[];
}

/** What to do next, given a status that already accounts for every finished episode. */
function decide(prev: AgentTaskStatus, input: ReconcileInput, events: Events): Decision {
  let status = { ...prev };
  const nowMs = input.now.getTime();
  const running = status.currentEpisode;
  const set = (phase: Phase, reason: string, message: string): AgentTaskStatus => ({
    ...status,
    phase,
    reason,
    message,
  });
  const stop = (reason: StopReason): Action[] =>
    running ? [{ type: 'StopEpisode', number: running.number, reason }] : [];

  if (input.deleted || (input.shuttingDown && running)) return { status, actions: stop('cancelled') };

  // An edited spec re-opens a finished task. Counters that enforce caps (episodes, cost) stay cumulative.
  if (
    isTerminal(status.phase) &&
    status.observedGeneration !== undefined &&
    status.observedGeneration !== input.generation
  ) {
    // A new run: its evidence starts over, and an open breaker gets a trial (HalfOpen), not a clean slate.
    const breaker =
      status.breaker?.state === 'Open'
        ? { ...status.breaker, state: 'HalfOpen' as const, halfOpen: 0 }
        : status.breaker;
    status = {
      ...set('Pending', 'SpecChanged', 'spec changed; task re-opened'),
      consecutiveFailures: 0,
      consecutiveRetries: 0,
      nextEpisodeAt: undefined,
      workspaceChanges: 0,
      testOnlyEpisodes: undefined,
      breaker,
      resume: resumeOnReopen(status.resume),
    };
    events.push(normal('TaskReopened', 'spec changed; task re-opened'));
  }

  const spec = input.spec;
  if (!spec) {
    const message = `invalid spec: ${input.specError ?? 'unknown error'}`;
    return { status: set('Failed', 'InvalidSpec', message), actions: stop('cancelled') };
  }
  if (spec.suspend) {
    if (running)
      return {
        status: set('Suspended', 'Suspended', `stopping episode ${running.number}: task suspended`),
        actions: stop('cancelled'),
      };
    return { status: set('Suspended', 'Suspended', 'task is suspended'), actions: [] };
  }
  // A person's resume request, or an auto-resume that is due, re-opens a NeedsReview task (resume.ts).
  if (!input.shuttingDown) status = applyResume(status, resumeContext(spec, input), events);
  if (running) {
    const observed = input.episode?.number === running.number ? input.episode : undefined;
    if (observed?.podName) status = { ...status, currentEpisode: { ...running, podName: observed.podName } };
    if (observed?.unschedulable)
      return { status: set('Waiting', 'Unschedulable', observed.unschedulable), actions: [] };
    // The clock runs from when the episode really started (a pod may wait to be scheduled first).
    const startedAt = Math.max(Date.parse(running.startedAt), Date.parse(observed?.startedAt ?? '') || 0);
    const deadline = startedAt + spec.limits.episodeTimeoutSeconds * 1000 + DEADLINE_GRACE_MS;
    if (nowMs >= deadline) return { status, actions: stop('timeout') };
    const message = `episode ${running.number}/${spec.limits.maxEpisodes} running`;
    return { status: set('Running', 'EpisodeRunning', message), actions: [], requeueAfterMs: deadline - nowMs };
  }
  if (isTerminal(status.phase)) return { status, actions: [] };

  if (input.dependencyCycle) {
    return {
      status: set('Failed', 'InvalidSpec', `dependsOn cycle: ${input.dependencyCycle.join(' → ')}`),
      actions: [],
    };
  }
  const deps = judgeDependencies(spec.dependsOn, input.dependencies);
  if (deps.kind === 'failed') {
    const message = `dependency ${deps.failed.join(', ')} did not succeed`;
    events.push(warning('TaskSkipped', message));
    return { status: set('Skipped', 'DependencyFailed', message), actions: [] };
  }
  if (deps.kind === 'pending') {
    return { status: set('Waiting', 'DependenciesPending', `waiting for ${deps.waitingOn.join(', ')}`), actions: [] };
  }

  const cap = capReached(status, spec, input.globalBudget);
  if (cap) {
    if (cap.reason !== 'MaxEpisodesReached') events.push(warning('BudgetExceeded', cap.message));
    else events.push(warning('MaxEpisodesReached', cap.message));
    return { status: { ...set('NeedsReview', cap.reason, cap.message), nextEpisodeAt: undefined }, actions: [] };
  }

  const nextAt = status.nextEpisodeAt ? Date.parse(status.nextEpisodeAt) : NaN;
  // A budget's hold is decided afresh every pass (a raised limit frees it at once); a backoff is not.
  if (nextAt > nowMs && !BUDGET_HOLD_REASONS.includes(status.reason ?? '')) {
    const phase: AgentTaskStatus =
      status.phase === 'Waiting' ? status : set('Waiting', 'Backoff', `next episode at ${status.nextEpisodeAt}`);
    return { status: phase, actions: [], requeueAfterMs: nextAt - nowMs };
  }
  if (input.shuttingDown) {
    return {
      status: set('Pending', 'ControllerStopped', 'the controller stopped; the next episode starts when it runs again'),
      actions: [],
    };
  }
  const budget = input.budgets?.length ? judgeBudgets(input.budgets, status, input.now) : undefined;
  if (budget && budget.kind !== 'go') return budgetHold(status, budget, input.now, events);
  if (!input.capacity) {
    return { status: set('Pending', 'Queued', 'waiting for a free episode slot (--max-concurrent)'), actions: [] };
  }

  const number = status.episodes + 1;
  const startedAt = input.now.toISOString();
  const message = `episode ${number}/${spec.limits.maxEpisodes} running`;
  status = {
    ...set('Running', 'EpisodeRunning', message),
    episodes: number,
    currentEpisode: { number, startedAt },
    nextEpisodeAt: undefined,
  };
  events.push(normal('EpisodeStarted', `episode ${number}/${spec.limits.maxEpisodes} started`));
  const deadlineMs = spec.limits.episodeTimeoutSeconds * 1000 + DEADLINE_GRACE_MS;
  return { status, actions: [{ type: 'StartEpisode', number }], requeueAfterMs: deadlineMs };
}

/** Caps are checked before every start: once reached, no episode starts. */
function capReached(
  status: AgentTaskStatus,
  spec: AgentTaskSpec,
  global: ReconcileInput['globalBudget'],
): { reason: string; message: string } | undefined {
  const { maxCostUSD, maxTokens, maxEpisodes } = spec.limits;
  if (maxCostUSD !== undefined && status.costUSD >= maxCostUSD) {
    return { reason: 'BudgetExceeded', message: `spent $${status.costUSD.toFixed(4)} of maxCostUSD $${maxCostUSD}` };
  }
  const tokens = status.tokens.input + status.tokens.output;
  if (maxTokens !== undefined && tokens >= maxTokens) {
    return { reason: 'BudgetExceeded', message: `used ${tokens} of maxTokens ${maxTokens}` };
  }
  const allSpent = global ? global.othersSpentUSD + status.costUSD : 0;
  if (global && allSpent >= global.limitUSD) {
    return {
      reason: 'GlobalBudgetExceeded',
      message: `all tasks together spent $${allSpent.toFixed(4)} of --budget-usd $${global.limitUSD}`,
    };
  }
  // Transient errors and usage limits say nothing about the agent's work: an outage never spends maxEpisodes.
  const counted = status.episodes - status.retries;
  // Resumes grant episodes in status (the spec is the user's): they add to the cap.
  const granted = status.resume?.grantedEpisodes ?? 0;
  if (counted >= maxEpisodes + granted) {
    const cap = granted > 0 ? `maxEpisodes ${maxEpisodes} + ${granted} granted` : `maxEpisodes ${maxEpisodes}`;
    return { reason: 'MaxEpisodesReached', message: `${counted} episodes without a completion signal (${cap})` };
  }
  return undefined;
}
