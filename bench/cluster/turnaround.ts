// Episode turnaround on a cluster: an episode pod terminates → the next episode's pod is created. The bench
// plays the kubelet (terminates every episode pod as soon as it appears, with the runner's termination
// message) and times both ends from its own pod watch, for the controller and for bare clients that do
// the same watch-and-create with no controller logic:
//   bare:        watch → create the next pod;
//   bare+status: watch → patch the task's status → create the next pod (the order the controller keeps, so
//                a finished episode's cost is on record before the next episode exists).
import { episodeResult } from '../../controller/api/episode-result.ts';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { podEpisode, TASK_LABEL } from '../../controller/kube/names.ts';
import { buildEpisodePod } from '../../controller/executors/cluster/episode-pod.ts';
import { isFinishedPod } from '../../controller/executors/cluster/pod-outcome.ts';
import { Informer, objectKey } from '../../controller/kube/informer.ts';
import type { LooseObject as KubeObject } from '../../test/support/loose-object.ts';
import type { KubeClient } from '../../controller/kube/kube-client.ts';
import { encodeTerminationMessage } from '../../controller/api/termination-message.ts';
import type { Cluster } from '../../test/support/cluster.ts';
import { createNamespace, FakeKubelet, startControllerProcess } from '../../test/support/kubelet.ts';
import { createAll, deleteTasksThenPods, taskBody } from './support.ts';

export interface Turnaround {
  p50: number;
  p99: number;
  samples: number;
}

const TASKS = '/apis/episodic.dev/v1alpha1/namespaces';
const RESULT = encodeTerminationMessage(episodeResult({ exitCode: 0, format: 'claude', message: 'did some work' }));

/**
 * Terminates every episode pod of ns once it appears; returns turnaround samples (ms from the watch event
 * that shows episode n terminated to the one that shows episode n+1 created), once `expected` pods ended.
 */
async function playKubelet(client: KubeClient, ns: string, expected: number, onTerminated?: (pod: KubeObject) => void) {
  const pods = new Informer<KubeObject>({
    client,
    resource: 'pods',
    path: `/api/v1/namespaces/${ns}/pods`,
    labelSelector: TASK_LABEL,
  });
  const kubelet = new FakeKubelet(client);
  const terminatedAt = new Map<string, number>();
  const samples: number[] = [];
  let ended = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const taskOf = (pod: KubeObject) => `${pod.metadata.labels?.[TASK_LABEL]}`;
  pods.on({
    add: (pod) => {
      const n = podEpisode(pod) ?? 0;
      const prev = terminatedAt.get(`${taskOf(pod)}#${n - 1}`);
      if (prev !== undefined) samples.push(performance.now() - prev);
      void kubelet
        .terminate(pod, { exitCode: 0, message: RESULT })
        .catch((err: unknown) => console.error(`kubelet: ${objectKey(pod)}: ${String(err)}`));
    },
    update: (old, pod) => {
      if (isFinishedPod(old) || !isFinishedPod(pod)) return;
      terminatedAt.set(`${taskOf(pod)}#${podEpisode(pod)}`, performance.now());
      onTerminated?.(pod);
      if (++ended >= expected) done();
    },
  });
  pods.start();
  await pods.waitForSync();
  return { finished, samples, stop: () => pods.stop() };
}

function summarize(samples: number[]): Turnaround {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), samples: sorted.length };
}

/** The controller runs tasks × episodes continue-episodes (maxEpisodes = episodes). */
export async function controllerTurnaround(
  cluster: Cluster,
  client: KubeClient,
  tasks: number,
  episodes: number,
): Promise<Turnaround> {
  const ns = await createNamespace('bench-turn');
  const kubelet = await playKubelet(client, ns, tasks * episodes);
  await createAll(client, ns, tasks, (i) => taskBody(ns, `t${i}`, { limits: { maxEpisodes: episodes } }));
  const proc = await startControllerProcess(cluster, [
    '--namespace',
    ns,
    '--kube-api-qps',
    '0',
    '--max-concurrent',
    String(tasks * 2),
    '--log-level',
    'info',
  ]);
  try {
    await kubelet.finished;
    return summarize(kubelet.samples);
  } finally {
    kubelet.stop();
    await proc.kill('SIGTERM');
    await deleteTasksThenPods(client, ns);
  }
}

/** A bare client: on "episode n terminated", (optionally patch the task's status, then) create pod n+1. */
export async function bareTurnaround(
  client: KubeClient,
  tasks: number,
  episodes: number,
  writeStatus: boolean,
): Promise<Turnaround> {
  const ns = await createNamespace(writeStatus ? 'bench-bare-status' : 'bench-bare');
  await createAll(client, ns, tasks, (i) => taskBody(ns, `t${i}`, { limits: { maxEpisodes: episodes } }));
  const list = await client.get<any>(`${TASKS}/${ns}/agenttasks`);
  const objects = new Map<string, KubeObject>((list.items as KubeObject[]).map((t) => [t.metadata.name, t]));
  const create = async (name: string, episode: number) => {
    const task = objects.get(name) as KubeObject;
    const spec = AgentTaskSpecSchema.parse(task.spec);
    await client.create(`/api/v1/namespaces/${ns}/pods`, buildEpisodePod({ task: task as any, spec, episode }), 'work');
  };
  const kubelet = await playKubelet(client, ns, tasks * episodes, (pod) => {
    const name = pod.metadata.labels?.[TASK_LABEL] as string;
    const n = podEpisode(pod) ?? 0;
    if (n >= episodes) return;
    void (async () => {
      if (writeStatus)
        await client.mergePatch(`${TASKS}/${ns}/agenttasks/${name}/status`, {
          status: { episodes: n + 1, lastEpisode: { number: n, outcome: 'continue' } },
        });
      await create(name, n + 1);
    })().catch((err: unknown) => console.error(`bare client: ${name}: ${String(err)}`));
  });
  try {
    await Promise.all([...objects.keys()].map((name) => create(name, 1)));
    await kubelet.finished;
    return summarize(kubelet.samples);
  } finally {
    kubelet.stop();
    await deleteTasksThenPods(client, ns);
  }
}
