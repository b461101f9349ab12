// What a pod tells about its episode: still running, finished (with an EpisodeResult), or stuck in a
// way only the pod shows (unschedulable, image never pulled). Pod-level facts beat the runner's own
// report: a runner killed by the kernel or the kubelet never got to write one.
import { clip, EPISODE_MESSAGE_MAX } from '../../api/bounds.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import { episodeResult } from '../../api/episode-result.ts';
import type { ObservedEpisode } from '../../reconciler/reconcile.ts';
import { decodeTerminationMessage } from '../../api/termination-message.ts';
import { podEpisode } from '../../kube/names.ts';
import { AGENT_CONTAINER } from './episode-pod.ts';
import type { ContainerStatus, Pod, PodStatus, TerminatedState } from '../../kube/objects.ts';

/** Waiting reasons that never fix themselves: after the grace period the episode is fatal. */
const STUCK_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/** A pod that holds a concurrency slot: an episode pod that has not finished and is not being deleted. */
export function isRunningPod(pod: Pod): boolean {
  if (podEpisode(pod) === undefined || pod.metadata.deletionTimestamp) return false;
  return !isFinishedPod(pod);
}

export function isFinishedPod(pod: Pod): boolean {
  const status: PodStatus = pod.status ?? {};
  if (status.phase === 'Succeeded' || status.phase === 'Failed') return true;
  return !!agentContainer(status)?.state?.terminated;
}

export interface PodObservation {
  episode: ObservedEpisode;
  /** The pod is stuck (never pulled its image): delete it once its episode is on record. */
  deletePod?: boolean;
}

export interface ObserveOptions {
  now: Date;
  imagePullGraceMs: number;
  /** This controller deleted (or is deleting) the pod. */
  deletedByController?: boolean;
}

export function observePod(pod: Pod, opts: ObserveOptions): PodObservation {
  const number = podEpisode(pod) ?? 0;
  const status: PodStatus = pod.status ?? {};
  const container = agentContainer(status) ?? status.containerStatuses?.[0];
  const startedAt: string | undefined =
    container?.state?.running?.startedAt ?? status.startTime ?? pod.metadata.creationTimestamp;
  const finished = (result: EpisodeResult, finishedAt?: string): PodObservation => ({
    episode: { number, state: 'finished', startedAt, finishedAt: finishedAt ?? opts.now.toISOString(), result },
  });

  const terminated = container?.state?.terminated;
  const podDone = status.phase === 'Succeeded' || status.phase === 'Failed';
  if (terminated || podDone) {
    return finished(resultOfTerminatedPod(pod, terminated), terminated?.finishedAt);
  }

  // Being deleted: the episode is over (a real kubelet takes up to the grace period to stop the container).
  if (pod.metadata.deletionTimestamp) {
    return {
      episode: {
        number,
        state: 'gone',
        startedAt,
        removedBy: opts.deletedByController ? 'controller' : 'someone-else',
      },
    };
  }
  if (status.reason === 'Evicted' || hasCondition(pod, 'DisruptionTarget')) {
    return finished(transient(`episode pod was evicted: ${status.message ?? status.reason ?? 'DisruptionTarget'}`));
  }

  const waiting = container?.state?.waiting;
  if (waiting?.reason && STUCK_REASONS.has(waiting.reason)) {
    const since = Date.parse(pod.metadata.creationTimestamp ?? '') || opts.now.getTime();
    const remaining = since + opts.imagePullGraceMs - opts.now.getTime();
    if (remaining <= 0) {
      const result = episodeResult({
        exitCode: null,
        errorClass: 'fatal',
        message: `${waiting.reason}: ${waiting.message ?? 'container could not start'}`,
      });
      return { ...finished(result), deletePod: true };
    }
    return { episode: { number, state: 'running', startedAt, recheckAfterMs: remaining } };
  }

  const scheduled = (status.conditions ?? []).find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    const unschedulable = clip(
      `episode pod cannot be scheduled: ${scheduled.message ?? 'Unschedulable'}`,
      EPISODE_MESSAGE_MAX,
    );
    return { episode: { number, state: 'running', startedAt, unschedulable } };
  }
  return { episode: { number, state: 'running', startedAt } };
}

/** The pod vanished: what it said last if it had finished, else gone (removed by us, or by someone else). */
export function observeDeletedPod(number: number, opts: ObserveOptions, lastSeen?: Pod): ObservedEpisode {
  if (lastSeen) {
    const seen = observePod(lastSeen, opts);
    if (seen.episode.state === 'finished') return seen.episode;
  }
  return { number, state: 'gone', removedBy: opts.deletedByController ? 'controller' : 'someone-else' };
}

function resultOfTerminatedPod(pod: Pod, terminated: TerminatedState | undefined): EpisodeResult {
  const status: PodStatus = pod.status ?? {};
  const exitCode: number | null = typeof terminated?.exitCode === 'number' ? terminated.exitCode : null;
  if (status.reason === 'DeadlineExceeded') {
    return episodeResult({
      exitCode,
      timedOut: true,
      message: status.message ?? 'activeDeadlineSeconds exceeded',
    });
  }
  if (terminated?.reason === 'OOMKilled') {
    return episodeResult({
      exitCode: exitCode ?? 137,
      signal: 'SIGKILL',
      message: 'agent container was OOMKilled (raise spec.agent.resources.limits.memory)',
    });
  }
  if (status.reason === 'Evicted' || hasCondition(pod, 'DisruptionTarget')) {
    return transient(`episode pod was evicted: ${status.message ?? status.reason ?? 'DisruptionTarget'}`);
  }
  const decoded = typeof terminated?.message === 'string' ? decodeTerminationMessage(terminated.message) : undefined;
  if (decoded) return decoded;
  const why = [terminated?.reason, status.reason, status.message].filter(Boolean).join(': ');
  return episodeResult({
    exitCode: exitCode ?? (status.phase === 'Succeeded' ? 0 : null),
    // A pod that "succeeded" without the runner's report still did not report a result: count it as failed.
    agentError: true,
    message: `episode pod ended without a result (exit code ${exitCode ?? 'unknown'}${why ? `, ${why}` : ''})`,
  });
}

function transient(message: string): EpisodeResult {
  return episodeResult({ exitCode: null, errorClass: 'transient', message });
}

function hasCondition(pod: Pod, type: string): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

function agentContainer(status: PodStatus): ContainerStatus | undefined {
  return (status.containerStatuses ?? []).find((c) => c.name === AGENT_CONTAINER);
}
