// Episode logs on a cluster: the agent container's log, read through the pod log API (the apiserver proxies
// it from the node's kubelet) and rendered readably (executors/output/log-render.ts) as plain text. Which
// pod, and whether it still exists or still runs, comes from the controller's pod informer cache: only the log
// itself is read from the apiserver. Bounded: the last TAIL_LINES lines, at most LIMIT_BYTES for a finished episode, at most
// MAX_STREAM_BYTES rendered per page, MAX_OPEN_STREAMS at once. Only the agent container's output is served:
// never the pod's spec or env.
import type { IncomingMessage } from 'node:http';
import { EPISODE_LABEL, episodePodName, TASK_LABEL } from '../kube/names.ts';
import { AGENT_CONTAINER } from '../executors/cluster/episode-pod.ts';
import { isFinishedPod } from '../executors/cluster/pod-outcome.ts';
import type { Informer } from '../kube/informer.ts';
import { isStatus, KubeError } from '../kube/kube-client.ts';
import type { KubeClient, Query } from '../kube/kube-client.ts';
import type { CustomObject, Pod } from '../kube/objects.ts';
import { logText } from './log-text.ts';
import type { EpisodeLog, LogRequest } from './log-text.ts';

export type { EpisodeLog } from './log-text.ts';

export const TAIL_LINES = 5000;
export const LIMIT_BYTES = 4 * 1024 * 1024;
export const MAX_STREAM_BYTES = 8 * 1024 * 1024;
export const MAX_OPEN_STREAMS = 16;

export interface PodLogInputs {
  client: KubeClient;
  pods: Informer<Pod>;
}

export class PodLogs {
  private readonly inputs: PodLogInputs;
  private open = 0;

  constructor(inputs: PodLogInputs) {
    this.inputs = inputs;
  }

  /** The log of `task`'s episode `episode`, followed while its pod runs; `signal` ends it (the page left). */
  async episodeLog(
    task: CustomObject,
    episode: number,
    signal: AbortSignal,
    req: LogRequest = {},
  ): Promise<EpisodeLog> {
    const namespace = task.metadata.namespace ?? '';
    const podName = episodePodName(task.metadata.name, episode);
    const pod = this.inputs.pods.get(`${namespace}/${podName}`);
    if (!pod || !belongsTo(pod, task, episode)) return gone(podName, episode);
    if (!pod.spec?.nodeName)
      return {
        ok: false,
        status: 409,
        message: `episode ${episode} has not started: pod ${podName} is not scheduled yet`,
      };
    if (this.open >= MAX_OPEN_STREAMS)
      return { ok: false, status: 503, message: `${this.open} logs are open already: close a page and try again` };
    this.open++;
    const log = await readPodLog(this.inputs.client, pod, episode, {
      follow: isRunning(pod),
      signal,
      maxBytes: MAX_STREAM_BYTES,
      raw: req.raw,
    });
    if (log.ok) void log.closed.then(() => this.open--);
    else this.open--;
    return log;
  }
}

export interface ReadPodLogOptions {
  follow: boolean;
  signal: AbortSignal;
  /** Rendered bytes at most: past them the text ends with a note. */
  maxBytes: number;
  /** The bytes as the container wrote them, not rendered (`episodic logs --raw`). */
  raw?: boolean;
}

/** A pod whose agent container may still write: its log is worth following. */
export function isRunning(pod: Pod): boolean {
  return !isFinishedPod(pod) && !pod.metadata.deletionTimestamp;
}

/** The agent container's log of an episode pod: the last TAIL_LINES lines, or LIMIT_BYTES when not followed. */
export async function readPodLog(
  client: KubeClient,
  pod: Pod,
  episode: number,
  opts: ReadPodLogOptions,
): Promise<EpisodeLog> {
  const { namespace, name } = pod.metadata;
  const query: Query = { container: AGENT_CONTAINER, tailLines: TAIL_LINES };
  if (opts.follow) query.follow = true;
  else query.limitBytes = LIMIT_BYTES;
  let body: IncomingMessage;
  try {
    body = await client.stream(`/api/v1/namespaces/${namespace}/pods/${name}/log`, query, opts.signal);
  } catch (err) {
    return refused(err, name, episode);
  }
  const text = logText(opts.raw, opts.maxBytes, 'kubectl logs');
  body.pipe(text);
  body.once('error', () => {}); // seen as an incomplete close below
  const closed = new Promise<void>((resolve) =>
    body.once('close', () => {
      if (!body.complete) text.end('\n--- the log stream broke off: read it again for the rest ---\n');
      resolve();
    }),
  );
  return { ok: true, follow: opts.follow, text, closed };
}

/** The pod of this task's episode, not a stray of an earlier task with the same name. */
function belongsTo(pod: Pod, task: CustomObject, episode: number): boolean {
  const labels = pod.metadata.labels ?? {};
  if (labels[TASK_LABEL] !== task.metadata.name || labels[EPISODE_LABEL] !== String(episode)) return false;
  const owner = pod.metadata.ownerReferences?.find((o) => o.controller)?.uid;
  return !owner || !task.metadata.uid || owner === task.metadata.uid;
}

function gone(podName: string, episode: number): EpisodeLog {
  return { ok: false, status: 410, message: podGoneMessage(podName, episode) };
}

export function podGoneMessage(podName: string, episode: number): string {
  return `The pod of episode ${episode} (${podName}) is gone, and its log with it: finished pods are pruned (--pod-retention) or were deleted.`;
}

function refused(err: unknown, podName: string, episode: number): EpisodeLog {
  if (isStatus(err, 404)) return gone(podName, episode);
  // 400: the container has not started ("is waiting to start: ContainerCreating"), or no longer exists.
  if (isStatus(err, 400)) return { ok: false, status: 409, message: `no log yet: ${(err as KubeError).detail ?? ''}` };
  const why = err instanceof KubeError ? err.message : String(err);
  return { ok: false, status: 502, message: `the pod log API refused: ${why}` };
}
