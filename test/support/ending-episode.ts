// A reconcile input in which episode n just finished with `result`: the common start of the leash tables.
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { episodeResult } from '../../controller/api/episode-result.ts';
import type { EpisodeResultInput } from '../../controller/api/episode-result.ts';
import type { ReconcileInput } from '../../controller/reconciler/reconcile.ts';

export const NOW = new Date('2026-11-23T12:00:00.000Z');

export function ending(
  spec: Record<string, unknown>,
  result: EpisodeResultInput,
  status: Partial<AgentTaskStatus> = {},
  n = 1,
): ReconcileInput {
  return {
    namespace: 'default',
    name: 't',
    generation: 1,
    spec: AgentTaskSpecSchema.parse({ prompt: 'p', agent: { command: ['a'] }, ...spec }),
    status: {
      ...emptyStatus(),
      observedGeneration: 1,
      phase: 'Running',
      episodes: n,
      currentEpisode: { number: n, startedAt: '2026-11-23T11:59:00.000Z' },
      ...status,
    },
    episode: { number: n, state: 'finished', result: episodeResult(result) },
    dependencies: {},
    freeSlots: 0,
    now: NOW,
    jitter: 0.5,
  };
}
