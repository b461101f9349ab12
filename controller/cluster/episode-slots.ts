// --max-concurrent: how many episode pods may run at once across all watched tasks. Counted from the pod
// cache (a restarted controller sees what runs) plus reservations for creates in flight, so parallel
// reconciles of different tasks cannot overshoot the limit between "decide" and "the pod shows up".
import { AGENT_CONTAINER, podEpisode } from './episode-pod.ts';
import type { KubeObject } from './informer.ts';
import { objectKey } from './informer.ts';

/** A pod that holds a slot: an episode pod that has not finished and is not being deleted. */
export function isRunningPod(pod: KubeObject): boolean {
  if (podEpisode(pod) === undefined || pod.metadata.deletionTimestamp) return false;
  return !isFinishedPod(pod);
}

export function isFinishedPod(pod: KubeObject): boolean {
  const status = pod.status ?? {};
  if (status.phase === 'Succeeded' || status.phase === 'Failed') return true;
  const container = (status.containerStatuses ?? []).find((c: any) => c.name === AGENT_CONTAINER);
  return !!container?.state?.terminated;
}

export class EpisodeSlots {
  private readonly running = new Set<string>();
  private reserved = 0;
  private readonly max: number;
  private readonly onFree: () => void;

  constructor(max: number, onFree: () => void) {
    this.max = max;
    this.onFree = onFree;
  }

  /** Called for every pod event. */
  observe(pod: KubeObject, deleted = false): void {
    const key = objectKey(pod);
    const before = this.running.has(key);
    const now = !deleted && isRunningPod(pod);
    if (now) this.running.add(key);
    else this.running.delete(key);
    if (before && !now) this.onFree();
  }

  free(): number {
    return this.max - this.running.size - this.reserved;
  }

  get runningCount(): number {
    return this.running.size;
  }

  /** Synchronously after the reconciler decided to start: nothing can run in between in JavaScript. */
  reserve(): void {
    this.reserved++;
  }

  release(): void {
    this.reserved = Math.max(0, this.reserved - 1);
    this.onFree();
  }
}
