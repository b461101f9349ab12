// Names the cluster parts share: episode pods' names and labels (the executor creates pods by them, the
// status sink and the episode records refer to them, `episodic get` finds them) and AgentTask API paths
// (the source's finalizer, the status writer). One module, so none of those has to import another.
import { createHash } from 'node:crypto';
import { GROUP, PLURAL, VERSION } from '../api/agent-task.ts';

export const TASK_LABEL = 'episodic.dev/task';
export const EPISODE_LABEL = 'episodic.dev/episode';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** On a merge queue's resolution episode pod: the queue waits for it, the task's own loop does not adopt it. */
export const RESOLUTION_LABEL = 'episodic.dev/merge-queue-resolution';
const MAX_NAME = 63;

/** On a merge queue's gate pod (it also carries TASK_LABEL: the task's sandbox NetworkPolicy fences it). */
export const GATE_LABEL = 'episodic.dev/merge-queue-gate';

/** A pod the merge queue waits for itself: the task's own loop neither adopts nor tidies it. */
export function isQueuePod(pod: { metadata?: { labels?: Record<string, string> } }): boolean {
  const labels = pod.metadata?.labels ?? {};
  return RESOLUTION_LABEL in labels || GATE_LABEL in labels;
}

/** `<task>-ep-<n>`; past 63 characters the task part is cut and a hash keeps names unique. */
export function episodePodName(task: string, episode: number): string {
  return withSuffix(task, `-ep-${episode}`);
}

/** `<task>-mq-gate`: one gate pod per task at a time (the queue deletes the last one before the next). */
export function queueGatePodName(task: string): string {
  return withSuffix(task, '-mq-gate');
}

function withSuffix(task: string, suffix: string): string {
  if (task.length + suffix.length <= MAX_NAME) return `${task}${suffix}`;
  const hash = createHash('sha256').update(task).digest('hex').slice(0, 8);
  const keep = MAX_NAME - suffix.length - hash.length - 1;
  return `${task.slice(0, keep).replace(/-+$/, '')}-${hash}${suffix}`;
}

/** Episode number of a pod we created, or undefined for a pod that is not an episode pod. */
export function podEpisode(pod: { metadata?: { labels?: Record<string, string> } }): number | undefined {
  const n = Number(pod.metadata?.labels?.[EPISODE_LABEL]);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** The REST path of an AgentTask, or of one of its subresources ("status"). */
export function taskPath(namespace: string, name: string, subresource = ''): string {
  return `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}/${name}${subresource ? `/${subresource}` : ''}`;
}
