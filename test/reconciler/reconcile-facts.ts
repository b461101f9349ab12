// The facts reconcile()'s table tests start from (reconcile.test.ts, reconcile-passes, reconcile-observed).
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus, Phase } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';
import type { DependencyFact } from '../../controller/reconciler/dependencies.ts';

export const NOW = new Date('2026-11-22T12:00:00.000Z');

export function spec(overrides: Record<string, unknown> = {}): AgentTaskSpec {
  return AgentTaskSpecSchema.parse({ prompt: 'do it', agent: { command: ['agent'] }, ...overrides });
}

export function input(over: Partial<ReconcileInput> = {}): ReconcileInput {
  return {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: spec(),
    status: { ...emptyStatus(), observedGeneration: 1 },
    dependencies: {},
    freeSlots: 1,
    now: NOW,
    jitter: 0.5,
    ...over,
  };
}

/** A dependency that exists, in `phase`, with no auto-resume scheduled. */
export function dep(phase: Phase): DependencyFact {
  return { phase, awaitingAutoResume: false };
}

/** A status with episode n running, plus a finished observation of it. */
export function finishing(
  result: EpisodeResultInput,
  statusOver: Partial<AgentTaskStatus> = {},
  n = 1,
): Partial<ReconcileInput> {
  return {
    status: {
      ...emptyStatus(),
      observedGeneration: 1,
      phase: 'Running',
      episodes: n,
      currentEpisode: { number: n, startedAt: '2026-11-22T11:59:00.000Z' },
      ...statusOver,
    },
    episode: { number: n, state: 'finished', finishedAt: NOW.toISOString(), result: episodeResult(result) },
  };
}

/** Episode 1 running since 11:59, observed as `episode`. */
export function observing(
  episode: Partial<NonNullable<ReconcileInput['episode']>>,
  over: Partial<ReconcileInput> = {},
): ReconcileInput {
  const base = finishing({ exitCode: 0 });
  return input({ ...base, episode: { number: 1, state: 'running', ...episode }, ...over });
}
