// What a cluster executor deletes when it tidies a task (executors/cluster/pod-tidy.ts), as a table of pods.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyStatus } from '../../controller/api/agent-task-status.ts';
import type { AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { podsToTidy } from '../../controller/executors/cluster/pod-tidy.ts';
import type { TidyFacts } from '../../controller/executors/cluster/pod-tidy.ts';
import { EPISODE_LABEL } from '../../controller/kube/names.ts';
import type { Pod } from '../../controller/kube/objects.ts';

function pod(episode: number, opts: { owner?: string; phase?: string; deleting?: boolean } = {}): Pod {
  return {
    metadata: {
      name: `t-${episode}`,
      namespace: 'ns',
      labels: { [EPISODE_LABEL]: String(episode) },
      ownerReferences: [
        {
          apiVersion: 'episodic.dev/v1alpha1',
          kind: 'AgentTask',
          name: 't',
          uid: opts.owner ?? 'u1',
          controller: true,
        },
      ],
      ...(opts.deleting ? { deletionTimestamp: '2026-12-03T00:00:00Z' } : {}),
    },
    status: { phase: opts.phase ?? 'Succeeded' },
  };
}

function facts(pods: Pod[], over: Partial<TidyFacts> & { last?: number; current?: number } = {}): TidyFacts {
  const { last, current, ...rest } = over;
  // The rule reads only the episode numbers of the status.
  const status = {
    ...emptyStatus(),
    ...(last ? { lastEpisode: { number: last } } : {}),
    ...(current ? { currentEpisode: { number: current } } : {}),
  } as AgentTaskStatus;
  return {
    pods,
    uid: 'u1',
    status,
    serverStatus: last ? { lastEpisode: { number: last } } : {},
    stuck: new Set(),
    podRetention: 1,
    ...rest,
  };
}

const names = (pods: Pod[]) => pods.map((p) => p.metadata.name).sort();

test('podsToTidy: strays, stuck pods on record and finished pods past retention go; the rest stay', () => {
  const cases: Array<[string, TidyFacts, string[]]> = [
    ['nothing recorded: nothing of ours goes', facts([pod(1), pod(2)]), []],
    ['a stray of an earlier task with the name goes at once', facts([pod(1, { owner: 'old' })]), ['t-1']],
    [
      'finished and recorded, past retention 1: the older go',
      facts([pod(1), pod(2), pod(3)], { last: 3 }),
      ['t-1', 't-2'],
    ],
    ['only what the server has recorded counts', facts([pod(1), pod(2)], { last: 2, serverStatus: {} }), []],
    ['the current episode is kept', facts([pod(1), pod(2)], { last: 2, current: 2, podRetention: 0 }), ['t-1']],
    ['a running pod is kept', facts([pod(1, { phase: 'Running' }), pod(2)], { last: 2, podRetention: 0 }), ['t-2']],
    [
      'a stuck pod on record goes',
      facts([pod(1, { phase: 'Pending' })], { last: 1, stuck: new Set(['ns/t-1']) }),
      ['t-1'],
    ],
    [
      'a pod being deleted is not deleted again',
      facts([pod(1, { deleting: true }), pod(2)], { last: 2, podRetention: 0 }),
      ['t-2'],
    ],
  ];
  for (const [name, f, want] of cases) assert.deepEqual(names(podsToTidy(f)), want, name);
});
