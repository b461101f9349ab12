// The rules of a pipeline (spec.steps): which step the task is in, what a step's end does to the task,
// and what a spec edit does to the steps. Each step is a loop of its own; the task's counters, cost and
// leash (breaker, budgets, maxCostUSD) stay the task's. See the README's "Pipelines".
import type { AgentTaskSpec, AgentTaskStatus, Phase, StepStatus } from '../api/agent-task.ts';
import { isTerminal } from '../api/agent-task.ts';
import { stepDigest, stepSummary } from '../api/steps.ts';
import { normal } from './actions.ts';
import type { Events } from './actions.ts';

/** The record of the step the task is in. */
export function stepRecord(status: AgentTaskStatus): StepStatus | undefined {
  return status.step ? status.steps?.[status.step.index - 1] : undefined;
}

/** Episodes counted against maxEpisodes: the step's in a pipeline, the task's otherwise; grants since it started. */
export function countedEpisodes(status: AgentTaskStatus): { counted: number; granted: number } {
  const granted = status.resume?.grantedEpisodes ?? 0;
  const rec = stepRecord(status);
  if (!rec) return { counted: status.episodes - status.retries, granted };
  return { counted: rec.episodes - rec.retries, granted: granted - (rec.grantBase ?? 0) };
}

/** "step 2/4 implement". */
export function stepWords(status: AgentTaskStatus): string | undefined {
  return status.step ? `step ${status.step.summary ?? `${status.step.index} ${status.step.name}`}` : undefined;
}

function freshRecord(spec: AgentTaskSpec, index: number): StepStatus {
  const name = spec.steps?.[index - 1]?.name ?? '';
  return { name, phase: 'Pending', episodes: 0, retries: 0, costUSD: 0, digest: stepDigest(spec, index) };
}

export function pointAt(spec: AgentTaskSpec, index: number, generation?: number): NonNullable<AgentTaskStatus['step']> {
  const steps = spec.steps ?? [];
  const name = steps[index - 1]?.name ?? '';
  return { index, name, summary: stepSummary(index, steps.length, name), generation };
}

/** A step (re)starts: its evidence and failure streaks are its own. */
export function newRun(status: AgentTaskStatus): AgentTaskStatus {
  return {
    ...status,
    consecutiveFailures: 0,
    consecutiveRetries: 0,
    nextEpisodeAt: undefined,
    workspaceChanges: 0,
    testOnlyEpisodes: undefined,
  };
}

/**
 * The steps as the spec of `generation` has them, applied while no episode runs. Steps that succeeded and whose
 * name and definition are unchanged stay finished; the task is in the first other step (kept with its counters
 * when it is unchanged), and every step after it starts over. The first pass of a pipeline puts the task in
 * step 1. Definitions are compared only after a spec edit: a controller upgrade that changes what a definition
 * includes (a new default) must not restart anything.
 */
export function syncSteps(
  prev: AgentTaskStatus,
  spec: AgentTaskSpec,
  generation: number,
): { status: AgentTaskStatus; events: Events } {
  const steps = spec.steps;
  if (!steps?.length) {
    if (!prev.step && !prev.steps) return { status: prev, events: [] };
    return { status: { ...prev, step: undefined, steps: undefined }, events: [] };
  }
  const followed = prev.step?.generation === generation && prev.steps?.length === steps.length;
  if (followed) return { status: prev, events: [] };
  const old = prev.steps ?? [];
  const digests = steps.map((_, i) => stepDigest(spec, i + 1));
  const same = (i: number) => old[i]?.name === steps[i].name && old[i]?.digest === digests[i];
  let kept = 0;
  // A step its skipWhen skipped is finished too: an edit elsewhere does not send the task back to check it again.
  const finished = (i: number) => old[i].phase === 'Succeeded' || old[i].reason === 'SkipWhen';
  while (kept < steps.length && same(kept) && finished(kept)) kept++;
  if (kept === steps.length) return allSucceeded(prev, spec, generation);
  const index = kept + 1;
  const continues = same(kept) && (prev.step === undefined || prev.step.index === index);
  // Steps after the current one: kept while they never ran, so nothing changes from pass to pass.
  const later = (i: number) => (same(i) && !old[i].startedAt ? old[i] : freshRecord(spec, i + 1));
  const records = steps.map((_, i) =>
    i < kept ? old[i] : i === kept ? (continues ? old[i] : freshRecord(spec, index)) : later(i),
  );
  const step = pointAt(spec, index, generation);
  const unchanged =
    prev.step?.index === index &&
    prev.step.summary === step.summary &&
    records.length === old.length &&
    records.every((r, i) => r === old[i]);
  if (unchanged) return { status: { ...prev, step }, events: [] };
  const status: AgentTaskStatus = { ...(continues ? prev : newRun(prev)), step, steps: records };
  if (old.length === 0) return { status, events: [] };
  const message = `steps changed: ${stepWords(status)} ${continues ? 'continues' : 'starts over'}`;
  return { status, events: [normal('StepsChanged', message)] };
}

function allSucceeded(
  prev: AgentTaskStatus,
  spec: AgentTaskSpec,
  generation: number,
): { status: AgentTaskStatus; events: Events } {
  const total = spec.steps?.length ?? 0;
  const status = { ...prev, step: pointAt(spec, total, generation), steps: prev.steps?.slice(0, total) };
  if (status.phase === 'Succeeded') return { status, events: [] };
  const message = `all ${total} steps succeeded`;
  return {
    status: { ...status, phase: 'Succeeded', reason: 'StepsSucceeded', message, nextEpisodeAt: undefined },
    events: [normal('TaskSucceeded', message)],
  };
}

/** The ended episode's spend and retries belong to the step it ran in, and its record names the step. */
export function chargeStep(before: AgentTaskStatus, after: AgentTaskStatus): AgentTaskStatus {
  const rec = stepRecord(after);
  if (!rec || !after.step) return after;
  const charged: StepStatus = {
    ...rec,
    costUSD: Math.round((rec.costUSD + after.costUSD - before.costUSD) * 1e10) / 1e10,
    retries: rec.retries + (after.retries - before.retries),
  };
  const lastEpisode = after.lastEpisode && { ...after.lastEpisode, step: after.step.name };
  return { ...withRecord(after, after.step.index, charged), lastEpisode };
}

/** A step's episode starts: counted for the step, and the step's start time set once. */
export function startStepEpisode(status: AgentTaskStatus, now: Date): AgentTaskStatus {
  const rec = stepRecord(status);
  if (!rec || !status.step) return status;
  const first = rec.startedAt === undefined;
  const started = {
    ...rec,
    episodes: rec.episodes + 1,
    startedAt: rec.startedAt ?? now.toISOString(),
    grantBase: first ? (status.resume?.grantedEpisodes ?? 0) : rec.grantBase,
  };
  return withRecord(status, status.step.index, started);
}

/**
 * A step whose completion rule is met: the task goes on with the next step (Pending, its first episode starts in
 * this pass), or, after the last one, stays Succeeded.
 */
export function advanceStep(
  status: AgentTaskStatus,
  spec: AgentTaskSpec | undefined,
  now: Date,
): { status: AgentTaskStatus; events: Events } {
  const total = spec?.steps?.length ?? 0;
  const rec = stepRecord(status);
  if (!spec || !rec || !status.step || status.phase !== 'Succeeded' || status.step.index >= total)
    return { status, events: [] };
  const done: StepStatus = { ...rec, phase: 'Succeeded', reason: status.reason, finishedAt: now.toISOString() };
  const from = stepWords(status);
  const index = status.step.index + 1;
  const step = pointAt(spec, index, status.step.generation);
  let next: AgentTaskStatus = { ...withRecord(status, status.step.index, done), step };
  next = newRun(next);
  const message = `${from} succeeded (${status.reason}); ${stepWords(next)} next`;
  return {
    status: { ...next, phase: 'Pending', reason: 'StepSucceeded', message },
    events: [normal('StepSucceeded', message)],
  };
}

/**
 * After the pass: the current step's record shows the task's phase, and the message of a task that ended in a
 * step names it (Failed, Skipped, NeedsReview: the task ends as its step did) unless `nameStep` is false.
 */
export function mirrorStep(status: AgentTaskStatus, now: Date, nameStep = true): AgentTaskStatus {
  const rec = stepRecord(status);
  // A last step its skipWhen skipped stays Skipped in a Succeeded task (skip-scope.ts).
  if (!rec || !status.step || (rec.reason === 'SkipWhen' && status.phase === 'Succeeded')) return status;
  const phase: Phase = status.phase ?? 'Pending';
  const ended = isTerminal(phase);
  const mirrored: StepStatus = {
    ...rec,
    phase,
    reason: status.reason,
    finishedAt: ended ? (rec.finishedAt ?? now.toISOString()) : undefined,
  };
  const next = withRecord(status, status.step.index, mirrored);
  const prefix = `${stepWords(status)}: `;
  if (nameStep && ended && !(status.message ?? '').startsWith(prefix))
    next.message = `${prefix}${status.message ?? phase}`;
  return next;
}

/**
 * The pass's events that carry the status message mirrorStep named the step in (TaskFailed, TaskSkipped, a
 * NeedsReview stop) name it the same way, so the event and its log line say which step ended the task.
 */
export function nameStepInEvents(events: Events, before: string | undefined, after: string | undefined): Events {
  if (!before || !after || before === after) return events;
  return events.map((e) => (e.message === before ? { ...e, message: after } : e));
}

export function withRecord(status: AgentTaskStatus, index: number, rec: StepStatus): AgentTaskStatus {
  const steps = [...(status.steps ?? [])];
  steps[index - 1] = rec;
  return { ...status, steps };
}
