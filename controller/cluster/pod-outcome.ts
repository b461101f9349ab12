// What a pod tells about its episode: still running, finished (with an EpisodeResult), or stuck in a
// way only the pod shows (unschedulable, image never pulled). Pod-level facts beat the runner's own
// report: a runner killed by the kernel or the kubelet never got to write one.
import type { EpisodeResult } from '../api/episode-result.ts';
import { episodeResult } from '../api/episode-result.ts';
import type { ObservedEpisode } from '../reconciler/reconcile.ts';
import { decodeTerminationMessage } from '../runner/termination-message.ts';
import { AGENT_CONTAINER, podEpisode } from './episode-pod.ts';
import type { KubeObject } from './informer.ts';

/** Waiting reasons that never fix themselves: after the grace period the episode is fatal. */
const STUCK_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/** Why the controller itself deleted a pod; decides the outcome once the pod is gone. */
export type StopIntent = 'cancelled' | 'timeout' | 'cleanup';

export interface PodObservation {
  episode: ObservedEpisode;
  /** Set while the pod cannot be scheduled: the task shows Waiting and the episode clock does not run. */
  unschedulable?: { message: string };
  /** The episode is decided but the pod still exists (stuck pulling): delete it once status is recorded. */
  deletePod?: boolean;
  /** Look again at this time even if nothing changes (the end of the image-pull grace period). */
  recheckAfterMs?: number;
}

export interface ObserveOptions {
  now: Date;
  imagePullGraceMs: number;
  /** Set when we deleted (or are deleting) this pod. */
  stopIntent?: StopIntent;
}

export function observePod(pod: KubeObject, opts: ObserveOptions): PodObservation {
  const number = podEpisode(pod) ?? 0;
  const status = pod.status ?? {};
  const container = (status.containerStatuses ?? []).find((c: any) => c.name === AGENT_CONTAINER) ?? status.containerStatuses?.[0];
  const startedAt: string | undefined = container?.state?.running?.startedAt ?? status.startTime ?? pod.metadata.creationTimestamp;
  const finished = (result: EpisodeResult, finishedAt?: string): PodObservation => ({
    episode: { number, state: 'finished', startedAt, finishedAt: finishedAt ?? opts.now.toISOString(), result },
  });

  const terminated = container?.state?.terminated;
  const podDone = status.phase === 'Succeeded' || status.phase === 'Failed';
  if (terminated || podDone) {
    return finished(resultOfTerminatedPod(pod, terminated, opts.stopIntent), terminated?.finishedAt);
  }

  // Our own delete in progress (a real kubelet takes up to the grace period to stop the container).
  if (pod.metadata.deletionTimestamp && opts.stopIntent) return finished(resultOfStop(opts.stopIntent));
  if (pod.metadata.deletionTimestamp) {
    return finished(transient(`episode pod ${pod.metadata.name} was deleted by someone else`));
  }
  if (status.reason === 'Evicted' || hasCondition(pod, 'DisruptionTarget')) {
    return finished(transient(`episode pod was evicted: ${status.message ?? status.reason ?? 'DisruptionTarget'}`));
  }

  const waiting = container?.state?.waiting;
  if (waiting && STUCK_REASONS.has(waiting.reason)) {
    const since = Date.parse(pod.metadata.creationTimestamp ?? '') || opts.now.getTime();
    const remaining = since + opts.imagePullGraceMs - opts.now.getTime();
    if (remaining <= 0) {
      const result = episodeResult({
        exitCode: null,
        errorClass: 'fatal',
        message: clip(`${waiting.reason}: ${waiting.message ?? 'container could not start'}`),
      });
      return { ...finished(result), deletePod: true };
    }
    return { episode: { number, state: 'running', startedAt }, recheckAfterMs: remaining };
  }

  const scheduled = (status.conditions ?? []).find((c: any) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    return {
      episode: { number, state: 'running', startedAt },
      unschedulable: { message: clip(`episode pod cannot be scheduled: ${scheduled.message ?? 'Unschedulable'}`) },
    };
  }
  return { episode: { number, state: 'running', startedAt } };
}

/** The pod vanished before we saw it finish: our delete → its intent; anyone else's → transient. */
export function observeDeletedPod(number: number, opts: ObserveOptions, lastSeen?: KubeObject): ObservedEpisode {
  if (lastSeen) {
    const seen = observePod(lastSeen, opts);
    if (seen.episode.state === 'finished') return seen.episode;
  }
  const result = opts.stopIntent ? resultOfStop(opts.stopIntent) : transient(`episode pod ${number} was deleted by someone else`);
  return { number, state: 'finished', finishedAt: opts.now.toISOString(), result };
}

function resultOfTerminatedPod(pod: KubeObject, terminated: any, stopIntent: StopIntent | undefined): EpisodeResult {
  const status = pod.status ?? {};
  const exitCode: number | null = typeof terminated?.exitCode === 'number' ? terminated.exitCode : null;
  // Our stop wins over what the runner said while being killed.
  if (stopIntent === 'cancelled' || stopIntent === 'timeout') return { ...resultOfStop(stopIntent), exitCode };
  if (status.reason === 'DeadlineExceeded') {
    return episodeResult({ exitCode, timedOut: true, message: clip(status.message ?? 'activeDeadlineSeconds exceeded') });
  }
  if (terminated?.reason === 'OOMKilled') {
    return episodeResult({ exitCode: exitCode ?? 137, signal: 'SIGKILL', message: 'agent container was OOMKilled (raise spec.agent.resources.limits.memory)' });
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
    message: clip(`episode pod ended without a result (exit code ${exitCode ?? 'unknown'}${why ? `, ${why}` : ''})`),
  });
}

function resultOfStop(intent: StopIntent): EpisodeResult {
  if (intent === 'timeout') return episodeResult({ exitCode: null, timedOut: true, message: 'episode timed out; pod deleted' });
  return episodeResult({ exitCode: null, cancelled: true, message: 'episode cancelled; pod deleted' });
}

function transient(message: string): EpisodeResult {
  return episodeResult({ exitCode: null, errorClass: 'transient', message: clip(message) });
}

function hasCondition(pod: KubeObject, type: string): boolean {
  return (pod.status?.conditions ?? []).some((c: any) => c.type === type && c.status === 'True');
}

function clip(text: string): string {
  return text.length > 1000 ? `${text.slice(0, 997)}...` : text;
}
