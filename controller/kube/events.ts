// core/v1 Events on AgentTasks (what `kubectl describe at NAME` and `kubectl get events` show). Best
// effort, like client-go's recorder: sent in the background on the bookkeeping lane, a repeat of the same
// event within 10 minutes bumps its count instead of creating a new object, and when the API is slow
// events are dropped rather than queued without bound.
import type { Logger } from 'pino';
import { clip, EVENT_MESSAGE_MAX } from '../api/bounds.ts';
import { isStatus } from './kube-client.ts';
import type { KubeClient } from './kube-client.ts';
import type { KubeEvent, KubeObject } from './objects.ts';

const EVENT_SOURCE = 'episodic-controller';
const AGGREGATE_MS = 10 * 60_000;

export interface EventRecorderOptions {
  client: KubeClient;
  /** reportingInstance: this controller replica. */
  identity: string;
  log: Logger;
  maxInFlight?: number;
}

interface Recent {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  at: number;
}

export class EventRecorder {
  private readonly recent = new Map<string, Recent>();
  private readonly inFlight = new Set<Promise<void>>();
  private seq = 0;
  private dropped = 0;
  private readonly opts: EventRecorderOptions;

  constructor(opts: EventRecorderOptions) {
    this.opts = opts;
  }

  record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    if (this.inFlight.size >= (this.opts.maxInFlight ?? 2000)) {
      if (this.dropped++ % 100 === 0) this.opts.log.warn({ dropped: this.dropped }, 'dropping events: API too slow');
      return;
    }
    const p = this.send(obj, type, reason, message).catch((err: unknown) => {
      this.opts.log.debug({ err: String(err), reason }, 'could not record event');
    });
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /** Resolves once every event recorded so far was sent (tests, shutdown). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async send(obj: KubeObject, type: string, reason: string, message: string): Promise<void> {
    const namespace = obj.metadata.namespace ?? 'default';
    const now = new Date();
    const stamp = now.toISOString().replace(/\.\d+Z$/, 'Z');
    const key = `${obj.metadata.uid}|${type}|${reason}|${message}`;
    this.prune(now.getTime());
    const seen = this.recent.get(key);
    if (seen && now.getTime() - seen.at <= AGGREGATE_MS) {
      seen.count++;
      seen.at = now.getTime();
      try {
        await this.opts.client.mergePatch(
          `/api/v1/namespaces/${seen.namespace}/events/${seen.name}`,
          { count: seen.count, lastTimestamp: stamp },
          'bookkeeping',
        );
        return;
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
        this.recent.delete(key);
      }
    }
    // Like client-go: object name plus a unique hex suffix.
    const name = `${obj.metadata.name}.${(now.getTime() * 1000 + (this.seq++ % 1000)).toString(16)}`;
    const event: KubeEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: obj.metadata.name,
        namespace,
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
      },
      type,
      reason,
      message: clip(message, EVENT_MESSAGE_MAX),
      source: { component: EVENT_SOURCE },
      reportingComponent: EVENT_SOURCE,
      reportingInstance: this.opts.identity,
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      count: 1,
    };
    await this.opts.client.create(`/api/v1/namespaces/${namespace}/events`, event, 'bookkeeping');
    this.recent.set(key, { name, namespace, count: 1, firstTimestamp: stamp, at: now.getTime() });
  }

  private prune(now: number): void {
    if (this.recent.size < 4096) return;
    for (const [key, r] of this.recent) if (now - r.at > AGGREGATE_MS) this.recent.delete(key);
  }
}
