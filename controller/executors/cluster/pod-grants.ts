// The gateway tokens of episode pods: issued when the pod is built, revoked the moment the pod is seen
// finished or deleted (what was metered on it is kept for the episode's record), re-granted after a
// controller restart for pods still running (by the token hash the pod carries), and, when the gateway
// refused for lack of budget, the pod deleted after a short grace so the episode ends at once.
import { gatewayCredentials } from '../../api/agent-credentials.ts';
import type { Logger } from 'pino';
import type { AgentTaskSpec, AgentTaskStatus } from '../../api/agent-task.ts';
import type { EpisodeLeash } from '../../api/episode-leash.ts';
import { episodeResult } from '../../api/episode-result.ts';
import type { GatewayMetered } from '../../api/episode-result.ts';
import type { Pod } from '../../kube/objects.ts';
import { objectKey } from '../../kube/informer.ts';
import type { ObservedEpisode } from '../../reconciler/reconcile.ts';
import { episodeLeash } from '../../reconciler/spend-cap.ts';
import { GATEWAY_TOKEN_ANNOTATION } from './gateway-binding.ts';
import type { ClusterGatewayBinding } from './gateway-binding.ts';
import { isFinishedPod } from './pod-outcome.ts';

/** After the gateway refused for lack of budget, the agent has this long to end by itself before its pod goes. */
export const REFUSED_GRACE_MS = 1000;
// What was metered on ended pods is kept this long for their record (an hour of pod churn at most).
const MEMORY_MS = 60 * 60_000;

export interface PodGrantsOptions {
  binding?: ClusterGatewayBinding;
  log: Logger;
  /** Deletes the episode's pod (the gateway refused and the agent did not stop). */
  stopPod: (namespace: string, task: string, episode: number) => void;
  /** A running pod's token cannot be re-granted after a restart: its episode fails with this message. */
  failEpisode: (taskKey: string, episode: number, message: string) => void;
}

interface Target {
  namespace: string;
  task: string;
  episode: number;
  spec: AgentTaskSpec;
  status: AgentTaskStatus;
}

export class PodGrants {
  private readonly opts: PodGrantsOptions;
  /** Pod key → what the gateway metered on its token, once the pod ended. */
  private readonly ended = new Map<string, { metered: GatewayMetered; at: number }>();
  private readonly restoring = new Set<string>();

  constructor(opts: PodGrantsOptions) {
    this.opts = opts;
  }

  /** The pod's gateway env and annotation for a task with spec.agent.credentials, or why it cannot run. */
  async open(t: Target, leash: EpisodeLeash | undefined) {
    const credentials = gatewayCredentials(t.spec);
    if (!credentials) return undefined;
    if (!this.opts.binding)
      return {
        ok: false as const,
        message: `AgentCredentials ${credentials} (spec.agent.credentials, or the namespace default): this controller serves no model gateway (chart: gateway.enabled; flag --gateway-addr); spec.agent.credentials: none runs the task without it`,
      };
    return this.opts.binding.open(this.request(t, credentials, leash));
  }

  /** Every pod event: the token of a pod finished, being deleted (its grace period) or gone dies now. */
  podChanged(pod: Pod, deleted: boolean): void {
    const hash = pod.metadata.annotations?.[GATEWAY_TOKEN_ANNOTATION];
    const over = deleted || !!pod.metadata.deletionTimestamp || isFinishedPod(pod);
    if (!hash || !this.opts.binding || !over) return;
    const metered = this.opts.binding.revoke(hash);
    if (metered) this.ended.set(objectKey(pod), { metered, at: Date.now() });
    this.forgetOld();
  }

  /** After a restart: a running pod whose token the gateway does not know is re-granted (once at a time). */
  ensure(t: Target, pod: Pod): void {
    const hash = pod.metadata.annotations?.[GATEWAY_TOKEN_ANNOTATION];
    const binding = this.opts.binding;
    const key = objectKey(pod);
    if (!hash || !binding || isFinishedPod(pod) || pod.metadata.deletionTimestamp) return;
    if (binding.has(hash) || this.restoring.has(key) || this.ended.has(key)) return;
    this.restoring.add(key);
    const fail = (why: string) =>
      this.opts.failEpisode(
        `${t.namespace}/${t.task}`,
        t.episode,
        `the controller restarted and cannot re-grant episode ${t.episode}'s gateway token: ${why}`,
      );
    binding
      .restore(this.request(t, gatewayCredentials(t.spec) ?? '', undefined), hash)
      .then((r) => {
        if (r.ok) this.opts.log.info({ pod: key }, 'gateway token re-granted after a restart');
        else fail(r.message);
      })
      .catch((err: unknown) => fail((err as Error).message))
      .finally(() => this.restoring.delete(key));
  }

  /** The observed episode with what the gateway metered; a pod deleted after a refusal ended at the gateway. */
  withMetered(podKey: string, seen: ObservedEpisode): ObservedEpisode {
    const metered = this.ended.get(podKey)?.metered;
    if (!metered) return seen;
    if (seen.state === 'finished' && seen.result) return { ...seen, result: { ...seen.result, gateway: metered } };
    if (!metered.refused) return seen;
    const message = `stopped at the gateway: ${metered.refused}`;
    return {
      number: seen.number,
      state: 'finished',
      result: { ...episodeResult({ exitCode: null, message }), gateway: metered },
    };
  }

  forget(podKey: string): void {
    this.ended.delete(podKey);
  }

  private request(t: Target, credentials: string, leash: EpisodeLeash | undefined) {
    let timer: NodeJS.Timeout | undefined;
    return {
      namespace: t.namespace,
      task: t.task,
      episode: t.episode,
      credentials,
      // A retried start or a re-grant has no leash of its own: the task's own caps, from its status.
      leash: leash ?? episodeLeash(t.status, t.spec.limits),
      onRefused: () => {
        timer ??= setTimeout(() => this.opts.stopPod(t.namespace, t.task, t.episode), REFUSED_GRACE_MS);
        timer.unref();
      },
    };
  }

  private forgetOld(): void {
    const now = Date.now();
    for (const [key, e] of this.ended) if (now - e.at > MEMORY_MS) this.ended.delete(key);
  }
}
