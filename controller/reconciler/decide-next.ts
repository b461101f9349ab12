// What to do next, given a status that already accounts for every finished episode: stop what a deleted,
// stopping, invalid or suspended task runs, re-open an edited or resumed task, watch a running episode's
// deadline, or go on to the start (before-start.ts). Pure, as reconcile() is.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { isTerminal } from '../api/agent-task.ts';
import { effectiveSpec } from '../api/steps.ts';
import type { Action, Events, StopReason } from './actions.ts';
import { normal } from './actions.ts';
import { beforeStart, capReached, episodeWords, withPhase } from './before-start.ts';
import type { Decision } from './before-start.ts';
import { reopenBreaker } from './breaker.ts';
import { applyResume, resumeOnReopen } from './resume.ts';
import { MAILBOX_RESYNC_MS, spawnInterrupt } from './spawn-decide.ts';
import { syncSteps } from './steps.ts';
import { suspendedBecause } from './suspend.ts';
import { DEADLINE_GRACE_MS } from './types.ts';
import type { ReconcileInput } from './types.ts';

export function resumeContext(spec: AgentTaskSpec, input: ReconcileInput) {
  return {
    spec,
    request: input.resumeRequest,
    recordedPhase: input.status.phase,
    now: input.now,
    capFor: (s: AgentTaskStatus) => capReached(s, effectiveSpec(spec, s), input.globalBudget),
  };
}

/** What to do next, given a status that already accounts for every finished episode. */
export function decide(prev: AgentTaskStatus, input: ReconcileInput): Decision {
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
