// Recording what skipWhen and scope did to an episode (README "skipWhen", "Scope"): a skipped step goes on
// to the next one without an agent episode; an episode outside its scope stops the task for review, or,
// reverted, counts as no progress. Pure, like the rest of the reconciler.
import type { AgentTaskSpec, AgentTaskStatus, StepStatus } from '../api/agent-task.ts';
import { isTerminal } from '../api/agent-task.ts';
import { clip, EPISODE_MESSAGE_MAX } from '../api/bounds.ts';
import type { EpisodeResult } from '../api/episode-result.ts';
import { recordEpisode } from './record-episode.ts';
import { completionWithoutProgress, scopeStop, withoutProgress } from './scope.ts';
import { newRun, pointAt, stepRecord, stepWords, withRecord } from './steps.ts';
import { normal, warning } from './actions.ts';
import type { Events } from './actions.ts';
import type { ObservedEpisode, ReconcileInput } from './types.ts';

/**
 * The executor found the step's skipWhen true and started no agent: the step is Skipped (SkipWhen), its
 * episode count and the task's stay as they were (the check's number is counted in skippedSteps), and the task goes on with the next step (its first episode starts in this
 * pass) or, after the last one, is Succeeded. The check used an episode number (its record: outcome skipped).
 */
export function skipStep(
  prev: AgentTaskStatus,
  spec: AgentTaskSpec,
  ended: ObservedEpisode,
  now: Date,
): { status: AgentTaskStatus; events: Events } | undefined {
  const rec = stepRecord(prev);
  const result = ended.result;
  if (!rec || !prev.step || !result?.skipped) return undefined;
  const at = now.toISOString();
  const episodes = Math.max(0, rec.episodes - 1);
  const why = result.message ?? 'skipWhen held';
  const done: StepStatus = {
    ...rec,
    phase: 'Skipped',
    reason: 'SkipWhen',
    episodes,
    startedAt: episodes > 0 ? rec.startedAt : at,
    finishedAt: at,
  };
  const from = stepWords(prev);
  const total = spec.steps?.length ?? 0;
  let status: AgentTaskStatus = {
    ...withRecord(prev, prev.step.index, done),
    episodes: Math.max(0, prev.episodes - 1),
    skippedSteps: (prev.skippedSteps ?? 0) + 1,
    currentEpisode: undefined,
    nextEpisodeAt: undefined,
    lastEpisode: {
      number: ended.number,
      outcome: 'skipped',
      exitCode: null,
      startedAt: ended.startedAt ?? prev.currentEpisode?.startedAt,
      finishedAt: ended.finishedAt ?? at,
      costUSD: 0,
      message: clip(`skipWhen: ${why}`, EPISODE_MESSAGE_MAX),
      step: prev.step.name,
    },
  };
  if (prev.step.index >= total) {
    const message = `${from} skipped (SkipWhen: ${why}); all ${total} steps done`;
    status = { ...status, phase: 'Succeeded', reason: 'StepsSucceeded', message };
    return { status, events: [normal('StepSkipped', message), normal('TaskSucceeded', message)] };
  }
  const next = newRun({ ...status, step: pointAt(spec, prev.step.index + 1, prev.step.generation) });
  const message = `${from} skipped (SkipWhen: ${why}); ${stepWords(next)} next`;
  return {
    status: { ...next, phase: 'Pending', reason: 'StepSkipped', message },
    events: [normal('StepSkipped', message)],
  };
}

/**
 * recordEpisode, with the episode's scope facts: a reverted episode is judged as no progress, and changes
 * left outside the scope stop the task (NeedsReview, OutOfScope) unless it already ended Failed or Skipped.
 */
export function recordScoped(
  prev: AgentTaskStatus,
  ended: ObservedEpisode,
  input: ReconcileInput,
): { status: AgentTaskStatus; events: Events } {
  const given = ended.result as EpisodeResult;
  if (!given.scope) return recordEpisode(prev, ended, input);
  const result = withoutProgress(given);
  const spec = input.spec && { ...input.spec, completion: completionWithoutProgress(input.spec.completion, given) };
  const recorded = recordEpisode(prev, { ...ended, result }, { ...input, spec });
  const stop = scopeStop(given, ended.number);
  if (!stop) return recorded;
  const status = recorded.status;
  const last = status.lastEpisode && {
    ...status.lastEpisode,
    message: clip(`${stop.message}${given.message ? `; ${given.message}` : ''}`, EPISODE_MESSAGE_MAX),
  };
  if (isTerminal(status.phase) && status.phase !== 'Succeeded' && status.phase !== 'NeedsReview')
    return { status: { ...status, lastEpisode: last }, events: recorded.events };
  return {
    status: { ...status, lastEpisode: last, phase: 'NeedsReview', ...stop, nextEpisodeAt: undefined },
    events: [...recorded.events.filter((e) => e.reason !== 'EpisodeSucceeded'), warning('OutOfScope', stop.message)],
  };
}
