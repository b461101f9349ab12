// A merge queue's resolution episode on a cluster ends as any episode pod ends (pod-outcome.ts): the queue
// waits for it here, on the pod cache's changes (and a slow look now and then, for an image-pull grace).
import { episodeResult } from '../../api/episode-result.ts';
import type { EpisodeResult } from '../../api/episode-result.ts';
import type { Pod } from '../../kube/objects.ts';
import { observeDeletedPod, observePod } from './pod-outcome.ts';

const LOOK_AGAIN_MS = 5_000;

export interface PodEndWatch {
  pod(): Pod | undefined;
  /** The API server refused the pod (or the gateway its token): the episode is over, as said. */
  refused(): string | undefined;
  /** Resolves on the next change of any pod in the cache. */
  changed(): Promise<void>;
  imagePullGraceMs: number;
  /** A stuck pod's episode is over: delete it. */
  deleteStuck(pod: Pod): Promise<void>;
  signal?: AbortSignal;
}

export async function podEnd(number: number, w: PodEndWatch): Promise<EpisodeResult> {
  for (;;) {
    w.signal?.throwIfAborted();
    const why = w.refused();
    if (why) return episodeResult({ exitCode: null, errorClass: 'fatal', message: why });
    const pod = w.pod();
    const opts = { now: new Date(), imagePullGraceMs: w.imagePullGraceMs };
    if (!pod) return observeDeletedPod(number, opts).result ?? gone();
    const seen = observePod(pod, opts);
    if (seen.episode.state === 'finished') {
      if (seen.deletePod) await w.deleteStuck(pod);
      return seen.episode.result ?? gone();
    }
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<void>((r) => {
      onAbort = () => r();
      w.signal?.addEventListener('abort', onAbort, { once: true });
    });
    await Promise.race([w.changed(), aborted, new Promise((r) => (timer = setTimeout(r, LOOK_AGAIN_MS)))]);
    clearTimeout(timer);
    if (onAbort) w.signal?.removeEventListener('abort', onAbort);
  }
}

function gone(): EpisodeResult {
  return episodeResult({ exitCode: null, errorClass: 'transient', message: 'the resolution episode pod is gone' });
}
