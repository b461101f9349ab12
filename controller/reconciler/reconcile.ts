// The reconciler: a pure function of (task, observed episode, clock) → (actions, next status, requeue-after).
// No I/O, no Date.now(), no Math.random(): everything it needs comes in as input, so every rule is
// table-testable and local and cluster mode share it unchanged.
import type { AgentTaskSpec, AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { DEFAULT_SPEC, isTerminal } from '../api/agent-task.ts';
import { episodeResult } from '../api/episode-result.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { backoffMs } from './backoff.ts';
import { conditionsFor } from './conditions.ts';
import { judgeDependencies } from './dependencies.ts';
import { classifyOutcome } from './outcome.ts';

/** Grace past the episode timeout before the reconciler itself asks for a stop (the executor should have). */
export const DEADLINE_GRACE_MS = 30_000;
/** Usage limit without a parseable reset time. */
export const USAGE_LIMIT_FALLBACK_MS = 60 * 60 * 1000;

export type StopReason = 'cancelled' | 'timeout';

/** What an executor sees of a task's newest episode: facts only; reconcile() decides what they mean. */
export interface ObservedEpisode {
  number: number;
  /** 'gone': nothing of the episode exists any more (or never did) and it left no result. */
  state: 'running' | 'finished' | 'gone';
  startedAt?: string;
  finishedAt?: string;
  /** Present when state is 'finished'. */
  result?: EpisodeResult;
  /** Running but cannot be scheduled (cluster): the task waits, and the episode's clock does not run. */
  unschedulable?: string;
  /** When 'gone': who removed its pod or process. Undefined: it never existed (a crash between recording and starting it). */
  removedBy?: 'controller' | 'someone-else';
  /** Cluster: the episode's pod, shown in status.currentEpisode. */
  podName?: string;
  /** Look again then even if nothing changes (e.g. when an image-pull grace period ends). */
  recheckAfterMs?: number;
}

export interface ReconcileInput {
  namespace: string;
  name: string;
  generation: number;
  /** Undefined when the spec does not validate; specError then says why. */
  spec?: AgentTaskSpec;
  specError?: string;
  /** The task is being deleted: stop what runs, start nothing. */
  deleted?: boolean;
  /** The controller is stopping (SIGINT): stop what runs, start nothing, and say so. */
  shuttingDown?: boolean;
  status: AgentTaskStatus;
  /** The newest episode the executor knows of for this task. */
  episode?: ObservedEpisode;
  /** A StopEpisode this controller already asked for: its reason decides how the episode ended. */
  stopRequested?: { number: number; reason: StopReason };
  /** Phase of each dependsOn entry; undefined when that task does not exist. */
  dependencies: Record<string, Phase | undefined>;
  /** A dependsOn cycle through this task, e.g. ["a", "b", "a"]. */
  dependencyCycle?: string[];
  /** Whether a concurrency slot is free to start an episode now. */
  capacity: boolean;
  /** --budget-usd: the limit and what all OTHER tasks spent (this task's own spend is in status). */
  globalBudget?: { limitUSD: number; othersSpentUSD: number };
  now: Date;
  /** In [0, 1): the caller's randomness for backoff jitter. */
  jitter: number;
}

export type Action =
  | { type: 'StartEpisode'; number: number }
  | { type: 'StopEpisode'; number: number; reason: StopReason }
  | { type: 'RecordEvent'; eventType: 'Normal' | 'Warning'; reason: string; message: string };

export interface ReconcileResult {
  status: AgentTaskStatus;
  actions: Action[];
  /** Reconcile again after this long even if nothing changes (a backoff ends, a deadline passes). */
  requeueAfterMs?: number;
}

type Events = Extract<Action, { type: 'RecordEvent' }>[];

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
  actions.push(...events, ...decided.actions);
  status.observedGeneration = input.generation;
  status.conditions = conditionsFor(status, input.generation, now);
  return { status, actions, requeueAfterMs: decided.requeueAfterMs };
}

/**
 * The episode's end as a result, when it ended. A stop this controller asked for decides the outcome over
 * what the process or pod reported while being killed; an episode that vanished without a result ended as
 * its remover (or its absence) says.
 */
function endedEpisode(episode: ObservedEpisode | undefined, stop: ReconcileInput['stopRequested']): ObservedEpisode | undefined {
  if (!episode || episode.state === 'running') return undefined;
  const stopped = stop?.number === episode.number ? stop.reason : undefined;
  if (stopped) {
    const exitCode = episode.result?.exitCode ?? null;
    const result =
      stopped === 'timeout'
        ? episodeResult({ exitCode, timedOut: true, message: episode.result?.timedOut ? episode.result.message : 'episode timed out; stopped' })
        : episodeResult({ exitCode, cancelled: true, message: 'episode cancelled; stopped' });
    return { ...episode, state: 'finished', result: { ...result, costUSD: episode.result?.costUSD ?? 0, tokens: episode.result?.tokens ?? result.tokens } };
  }
  if (episode.state === 'finished') return episode.result ? episode : undefined;
  const n = episode.number;
  const result =
    episode.removedBy === 'someone-else'
      ? episodeResult({ exitCode: null, errorClass: 'transient', message: `episode ${n} was deleted by someone else (its pod or process)` })
      : episodeResult({
          exitCode: null,
          interrupted: true,
          message:
            episode.removedBy === 'controller'
              ? `episode ${n} was stopped by an earlier controller`
              : `episode ${n} was on record but never started (the controller stopped in between)`,
        });
  return { ...episode, state: 'finished', result };
}

/** A running episode the status does not know (status write lost before a crash): adopt it, never re-run its number. */
function adoptUnknownEpisode(status: AgentTaskStatus, episode: ObservedEpisode | undefined, now: string): AgentTaskStatus {
  if (!episode || status.currentEpisode) return status;
  if (episode.number <= (status.lastEpisode?.number ?? 0)) return status;
  return {
    ...status,
    episodes: Math.max(status.episodes, episode.number),
    currentEpisode: { number: episode.number, startedAt: episode.startedAt ?? now },
  };
}

function recordEpisode(
  prev: AgentTaskStatus,
  episode: ObservedEpisode,
  input: ReconcileInput,
  events: Events,
): AgentTaskStatus {
  const result = episode.result as EpisodeResult;
  const now = input.now;
  const completion = input.spec?.completion ?? DEFAULT_SPEC.completion;
  const { outcome, reason } = classifyOutcome(result, completion);
  const n = episode.number;
  const detail = result.message ? `: ${result.message}` : '';
  const status: AgentTaskStatus = {
    ...prev,
    currentEpisode: undefined,
    nextEpisodeAt: undefined,
    costUSD: round6(prev.costUSD + result.costUSD),
    tokens: {
      input: prev.tokens.input + result.tokens.input,
      output: prev.tokens.output + result.tokens.output,
      cacheRead: prev.tokens.cacheRead + result.tokens.cacheRead,
      cacheWrite: prev.tokens.cacheWrite + result.tokens.cacheWrite,
    },
    lastEpisode: {
      number: n,
      outcome,
      exitCode: result.exitCode,
      startedAt: episode.startedAt ?? prev.currentEpisode?.startedAt,
      finishedAt: episode.finishedAt ?? now.toISOString(),
      costUSD: result.costUSD,
      message: result.message,
    },
  };
  const setPhase = (phase: Phase, why: string, message: string) => {
    status.phase = phase;
    status.reason = why;
    status.message = message;
  };
  const backoff = input.spec?.backoff ?? DEFAULT_SPEC.backoff;
  const maxFailures = (input.spec?.limits ?? DEFAULT_SPEC.limits).maxConsecutiveFailures;

  switch (outcome) {
    case 'succeeded':
      status.consecutiveFailures = 0;
      status.consecutiveRetries = 0;
      setPhase('Succeeded', reason, `episode ${n} finished the task (${reason})`);
      events.push(normal('EpisodeSucceeded', `episode ${n} succeeded (${reason})`));
      break;
    case 'continue':
      status.consecutiveFailures = 0;
      status.consecutiveRetries = 0;
      setPhase('Pending', 'EpisodeFinished', `episode ${n} exited 0 without a completion signal; continuing`);
      events.push(normal('EpisodeFinished', `episode ${n} made progress; no completion signal yet`));
      break;
    case 'failed':
    case 'timeout': {
      status.consecutiveFailures = prev.consecutiveFailures + 1;
      status.consecutiveRetries = 0;
      const what = outcome === 'timeout' ? 'timed out' : `failed (${reason})`;
      events.push(warning('EpisodeFailed', `episode ${n} ${what}${detail}`));
      if (status.consecutiveFailures >= maxFailures) {
        setPhase('Skipped', 'ConsecutiveFailures', `${status.consecutiveFailures} consecutive failed episodes; last ${what}${detail}`);
        events.push(warning('TaskSkipped', status.message as string));
      } else {
        const wait = backoffMs(backoff, status.consecutiveFailures, input.jitter);
        status.nextEpisodeAt = new Date(now.getTime() + wait).toISOString();
        setPhase('Waiting', 'Backoff', `episode ${n} ${what}; failure ${status.consecutiveFailures}/${maxFailures}, next episode at ${status.nextEpisodeAt}`);
      }
      break;
    }
    case 'transient': {
      status.retries = prev.retries + 1;
      status.consecutiveRetries = prev.consecutiveRetries + 1;
      const wait = backoffMs(backoff, status.consecutiveRetries, input.jitter);
      status.nextEpisodeAt = new Date(now.getTime() + wait).toISOString();
      setPhase('Waiting', 'Backoff', `episode ${n} hit a transient error${detail}; retrying at ${status.nextEpisodeAt}`);
      events.push(warning('EpisodeRetrying', status.message as string));
      break;
    }
    case 'usageLimit': {
      status.retries = prev.retries + 1;
      const reset = result.resetAt ? Date.parse(result.resetAt) : NaN;
      const at = reset > now.getTime() ? reset : now.getTime() + USAGE_LIMIT_FALLBACK_MS;
      status.nextEpisodeAt = new Date(at).toISOString();
      setPhase('Waiting', 'UsageLimit', `episode ${n} hit the agent's usage limit; resuming at ${status.nextEpisodeAt}`);
      events.push(warning('UsageLimit', status.message as string));
      break;
    }
    case 'fatal':
      setPhase('Failed', 'FatalError', `episode ${n} failed fatally${detail}`);
      events.push(warning('TaskFailed', status.message as string));
      break;
    case 'interrupted':
      setPhase('Pending', 'Interrupted', `episode ${n} was interrupted (controller restart); retrying`);
      events.push(warning('EpisodeInterrupted', status.message as string));
      break;
    case 'cancelled':
      setPhase('Pending', 'Cancelled', `episode ${n} was cancelled`);
      events.push(normal('EpisodeCancelled', status.message as string));
      break;
  }
  return status;
}

interface Decision {
  status: AgentTaskStatus;
  actions: Action[];
  requeueAfterMs?: number;
}

/** What to do next, given a status that already accounts for every finished episode. */
function decide(prev: AgentTaskStatus, input: ReconcileInput, events: Events): Decision {
  let status = { ...prev };
  const nowMs = input.now.getTime();
  const running = status.currentEpisode;
  const set = (phase: Phase, reason: string, message: string): AgentTaskStatus => ({ ...status, phase, reason, message });
  const stop = (reason: StopReason): Action[] =>
    running ? [{ type: 'StopEpisode', number: running.number, reason }] : [];

  if (input.deleted || (input.shuttingDown && running)) return { status, actions: stop('cancelled') };

  // An edited spec re-opens a finished task. Counters that enforce caps (episodes, cost) stay cumulative.
  if (isTerminal(status.phase) && status.observedGeneration !== undefined && status.observedGeneration !== input.generation) {
    status = { ...set('Pending', 'SpecChanged', 'spec changed; task re-opened'), consecutiveFailures: 0, consecutiveRetries: 0, nextEpisodeAt: undefined };
    events.push(normal('TaskReopened', 'spec changed; task re-opened'));
  }

  const spec = input.spec;
  if (!spec) {
    const message = `invalid spec: ${input.specError ?? 'unknown error'}`;
    return { status: set('Failed', 'InvalidSpec', message), actions: stop('cancelled') };
  }
  if (spec.suspend) {
    if (running) return { status: set('Suspended', 'Suspended', `stopping episode ${running.number}: task suspended`), actions: stop('cancelled') };
    return { status: set('Suspended', 'Suspended', 'task is suspended'), actions: [] };
  }
  if (running) {
    const observed = input.episode?.number === running.number ? input.episode : undefined;
    if (observed?.podName) status = { ...status, currentEpisode: { ...running, podName: observed.podName } };
    if (observed?.unschedulable) return { status: set('Waiting', 'Unschedulable', observed.unschedulable), actions: [] };
    // The clock runs from when the episode really started (a pod may wait to be scheduled first).
    const startedAt = Math.max(Date.parse(running.startedAt), Date.parse(observed?.startedAt ?? '') || 0);
    const deadline = startedAt + spec.limits.episodeTimeoutSeconds * 1000 + DEADLINE_GRACE_MS;
    if (nowMs >= deadline) return { status, actions: stop('timeout') };
    const message = `episode ${running.number}/${spec.limits.maxEpisodes} running`;
    return { status: set('Running', 'EpisodeRunning', message), actions: [], requeueAfterMs: deadline - nowMs };
  }
  if (isTerminal(status.phase)) return { status, actions: [] };

  if (input.dependencyCycle) {
    return { status: set('Failed', 'InvalidSpec', `dependsOn cycle: ${input.dependencyCycle.join(' → ')}`), actions: [] };
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
  if (nextAt > nowMs) {
    const phase: AgentTaskStatus = status.phase === 'Waiting' ? status : set('Waiting', 'Backoff', `next episode at ${status.nextEpisodeAt}`);
    return { status: phase, actions: [], requeueAfterMs: nextAt - nowMs };
  }
  if (input.shuttingDown) {
    return { status: set('Pending', 'ControllerStopped', 'the controller stopped; the next episode starts when it runs again'), actions: [] };
  }
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
    return { reason: 'GlobalBudgetExceeded', message: `all tasks together spent $${allSpent.toFixed(4)} of --budget-usd $${global.limitUSD}` };
  }
  if (status.episodes >= maxEpisodes) {
    return { reason: 'MaxEpisodesReached', message: `${status.episodes} episodes without a completion signal (maxEpisodes ${maxEpisodes})` };
  }
  return undefined;
}

function normal(reason: string, message: string): Events[number] {
  return { type: 'RecordEvent', eventType: 'Normal', reason, message };
}
function warning(reason: string, message: string): Events[number] {
  return { type: 'RecordEvent', eventType: 'Warning', reason, message };
}
function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
