// `episodic logs NAME --kubeconfig P`: an episode's log from its pod, through the pod log API, with the
// reader the cluster console uses (console/pod-logs.ts): rendered for reading, or --raw; -f follows the
// episode while its pod runs. When the pod is gone, it says so and prints the last message its record kept.
import { taskEpisodeRecords } from '../console/cluster-source.ts';
import { isRunning, podGoneMessage, readPodLog } from '../console/pod-logs.ts';
import { episodePodName, podEpisode, TASK_LABEL } from '../kube/names.ts';
import { loadKubeConfig } from '../kube/kube-config.ts';
import { KubeClient } from '../kube/kube-client.ts';
import type { Pod } from '../kube/objects.ts';
import { printable } from '../util/printable.ts';
import { episodeHeader } from './logs.ts';

export interface ClusterLogsOptions {
  kubeconfig: string;
  namespace: string;
  episode?: number;
  follow?: boolean;
  raw?: boolean;
}

export async function logsOnCluster(name: string, opts: ClusterLogsOptions): Promise<number> {
  let client: KubeClient;
  try {
    client = await KubeClient.create(await loadKubeConfig(opts.kubeconfig), { userAgent: 'episodic-logs' });
  } catch (err) {
    console.error(`episodic logs: cannot load the kubeconfig: ${(err as Error).message}`);
    return 1;
  }
  try {
    return await printEpisodeLog(client, name, opts);
  } catch (err) {
    console.error(`episodic logs: ${(err as Error).message}`);
    return 1;
  } finally {
    client.close();
  }
}

async function printEpisodeLog(client: KubeClient, name: string, opts: ClusterLogsOptions): Promise<number> {
  const task = `${opts.namespace}/${name}`;
  const pods = await client.get<{ items: Pod[] }>(`/api/v1/namespaces/${opts.namespace}/pods`, {
    labelSelector: `${TASK_LABEL}=${name}`,
  });
  const records = await taskEpisodeRecords(client, opts.namespace, name);
  const episode =
    opts.episode ?? Math.max(0, ...pods.items.map((p) => podEpisode(p) ?? 0), ...records.map((r) => r.number));
  if (episode === 0) {
    console.error(`episodic logs: ${task} has no episode pods and no episode records`);
    return 1;
  }
  const record = records.find((r) => r.number === episode);
  if (!opts.raw) process.stdout.write(`${episodeHeader(task, episode, record)}\n`);
  const pod = pods.items.find((p) => podEpisode(p) === episode);
  const log = pod
    ? await readPodLog(client, pod, episode, {
        follow: !!opts.follow && isRunning(pod),
        signal: new AbortController().signal,
        maxBytes: Number.POSITIVE_INFINITY,
        raw: opts.raw,
      })
    : undefined;
  if (!log?.ok) {
    console.error(`episodic logs: ${log?.message ?? podGoneMessage(episodePodName(name, episode), episode)}`);
    if (record?.message) console.error(`the episode record kept its last message:\n${printable(record.message, 8000)}`);
    return 1;
  }
  for await (const chunk of log.text) {
    if (!process.stdout.write(chunk)) await new Promise((resolve) => process.stdout.once('drain', resolve));
  }
  return 0;
}
