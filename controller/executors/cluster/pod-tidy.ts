// Which of a task's pods the executor deletes when it tidies: a rule of the pod cache and the task's status.
import type { AgentTaskStatus } from '../../api/agent-task.ts';
import { objectKey } from '../../kube/informer.ts';
import { GATE_LABEL, podEpisode } from '../../kube/names.ts';
import type { Pod } from '../../kube/objects.ts';
import { isFinishedPod } from './pod-outcome.ts';

export interface TidyFacts {
  /** Every pod labelled with the task's key, whichever task made it. */
  pods: readonly Pod[];
  /** The uid of the task as it is now. */
  uid: string | undefined;
  status: AgentTaskStatus;
  /** The task's status as the server has it (unvalidated). */
  serverStatus: unknown;
  /** Keys of pods stuck pulling their image. */
  stuck: ReadonlySet<string>;
  /** Finished pods kept per task, newest first. */
  podRetention: number;
}

/** Strays of an earlier task with the same name, stuck pods on record, finished pods past retention. */
export function podsToTidy(f: TidyFacts): Pod[] {
  const doomed = f.pods.filter((p) => ownerUid(p) !== f.uid);
  // Only what the server has on record: a status still being written may yet be lost with its pod.
  const recorded = Math.min(f.status.lastEpisode?.number ?? 0, lastEpisodeOnServer(f.serverStatus));
  const mine = f.pods.filter((p) => ownerUid(p) === f.uid && !p.metadata.deletionTimestamp);
  doomed.push(...mine.filter((p) => f.stuck.has(objectKey(p)) && (podEpisode(p) ?? 0) <= recorded));
  const finished = mine
    .filter((p) => !p.metadata.labels?.[GATE_LABEL]) // the queue replaces its gate pod itself
    .filter(
      (p) => (podEpisode(p) ?? 0) <= recorded && podEpisode(p) !== f.status.currentEpisode?.number && isFinishedPod(p),
    )
    .sort((a, b) => (podEpisode(b) ?? 0) - (podEpisode(a) ?? 0));
  doomed.push(...finished.slice(f.podRetention));
  return [...new Set(doomed)];
}

/** The uid of the task that owns a pod (its controller ownerReference). */
export function ownerUid(pod: Pod): string | undefined {
  return pod.metadata.ownerReferences?.find((o) => o.controller)?.uid;
}

/** status.lastEpisode.number as the server has it (the status sink validates statuses; here 0 stands for none). */
function lastEpisodeOnServer(status: unknown): number {
  const number = (status as { lastEpisode?: { number?: unknown } } | undefined)?.lastEpisode?.number;
  return typeof number === 'number' ? number : 0;
}
