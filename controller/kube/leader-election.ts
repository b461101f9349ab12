// Leader election on a coordination.k8s.io/v1 Lease, after client-go's leaderelection package (no npm
// library for it is both maintained and small). Rules that keep two replicas from ever both leading:
//   * every write carries the resourceVersion it was based on (optimistic concurrency: 409 = lost race);
//   * a lease held by someone else counts as expired only after leaseDuration of *our* clock has passed
//     since we last saw it change — we never trust the other replica's timestamps;
//   * a leader that cannot renew within renewDeadline (< leaseDuration) gives up leadership by itself.
import type { Logger } from 'pino';
import { isStatus } from './kube-client.ts';
import type { KubeClient } from './kube-client.ts';
import type { Lease as KubeLease } from './objects.ts';

export const LEASE_NAME = 'episodic-controller';
/** client-go's leader election defaults. */
export const LEASE_DEFAULTS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

export interface LeaderElectionOptions {
  client: KubeClient;
  namespace: string;
  name?: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  onStartedLeading(): void;
  onStoppedLeading(): void;
}

/** A Lease as this elector reads and writes it: it always sets the spec. */
type Lease = Omit<KubeLease, 'spec'> & { spec: NonNullable<KubeLease['spec']> };

/** metav1.MicroTime wants exactly six fractional digits. */
function microTime(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private leading = false;
  private stopped = false;
  private observed: { holder?: string; renewTime?: string; at: number } | undefined;
  private lastRenew = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly opts: Required<
    Pick<LeaderElectionOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs' | 'name'>
  > &
    LeaderElectionOptions;

  constructor(opts: LeaderElectionOptions) {
    this.opts = { name: LEASE_NAME, ...LEASE_DEFAULTS, ...opts };
    if (this.opts.renewDeadlineMs >= this.opts.leaseDurationMs)
      throw new Error('renewDeadline must be shorter than leaseDuration');
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops campaigning; a leader releases the lease so a standby takes over at once instead of after expiry. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (!this.leading) return;
    this.leading = false;
    try {
      const lease = await this.get();
      if (lease?.spec.holderIdentity === this.opts.identity) {
        const now = microTime();
        await this.put({
          ...lease,
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
        });
      }
    } catch (err) {
      this.opts.log.warn({ err: String(err) }, 'could not release the leader lease');
    }
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), delayMs);
  }

  private async tick(): Promise<void> {
    let ok = false;
    try {
      ok = await this.tryAcquireOrRenew();
    } catch (err) {
      this.opts.log.debug({ err: String(err) }, 'leader lease request failed');
    }
    if (this.stopped) return;
    const now = Date.now();
    if (ok) {
      this.lastRenew = now;
      if (!this.leading) {
        this.leading = true;
        this.opts.log.info(
          { lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.opts.identity },
          'became leader',
        );
        this.opts.onStartedLeading();
      }
    } else if (this.leading && now - this.lastRenew >= this.opts.renewDeadlineMs) {
      this.leading = false;
      this.opts.log.warn(
        { lease: `${this.opts.namespace}/${this.opts.name}` },
        'lost leadership: could not renew the lease in time',
      );
      this.opts.onStoppedLeading();
    }
    // client-go jitters the retry period by up to 20% so replicas don't hit the lease in step.
    this.schedule(this.opts.retryPeriodMs * (this.leading ? 1 : 1 + Math.random() * 0.2));
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const durationSeconds = Math.max(1, Math.ceil(this.opts.leaseDurationMs / 1000));
    const lease = await this.get();
    if (!lease) {
      const fresh: Lease = {
        metadata: { name: this.opts.name, namespace: this.opts.namespace },
        spec: {
          holderIdentity: this.opts.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      };
      try {
        await this.opts.client.create(
          `/apis/coordination.k8s.io/v1/namespaces/${this.opts.namespace}/leases`,
          fresh,
          'work',
        );
        return true;
      } catch (err) {
        if (isStatus(err, 409)) return false;
        throw err;
      }
    }
    const { holderIdentity: holder, renewTime } = lease.spec;
    if (!this.observed || this.observed.holder !== holder || this.observed.renewTime !== renewTime) {
      this.observed = { holder, renewTime, at: now.getTime() };
    }
    const heldByOther = !!holder && holder !== this.opts.identity;
    const theirDurationMs = (lease.spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (heldByOther && this.observed.at + theirDurationMs > now.getTime()) return false;

    const mine = holder === this.opts.identity;
    const next: Lease = {
      metadata: lease.metadata,
      spec: {
        holderIdentity: this.opts.identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: mine ? lease.spec.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (lease.spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
      },
    };
    try {
      const written = await this.put(next);
      this.observed = { holder: this.opts.identity, renewTime: written.spec.renewTime, at: now.getTime() };
      return true;
    } catch (err) {
      if (isStatus(err, 409)) return false;
      throw err;
    }
  }

  private async get(): Promise<Lease | undefined> {
    try {
      return await this.opts.client.get<Lease>(this.path(), undefined, 'work');
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  private put(lease: Lease): Promise<Lease> {
    return this.opts.client.request<Lease>('PUT', this.path(), {
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease },
      lane: 'work',
      timeoutMs: this.opts.renewDeadlineMs,
    });
  }

  private path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.opts.namespace}/leases/${this.opts.name}`;
  }
}
