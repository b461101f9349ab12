// The pools of every AgentCredentials the gateway serves, one code path for both modes: a pool is made with
// the status kept from before (a restart keeps pauses and totals), its status goes back to the store behind
// one port (a file locally, the /status subresource on a cluster), coalesced (credentials-status-write.ts),
// and a pause beginning or ending wakes the tasks that use the pool.
import type { GatewayMetrics } from '../metrics/gateway-metrics.ts';
import { statusWriteDelay } from '../reconciler/credentials-status-write.ts';
import { CredentialPool } from './credential-pool.ts';
import type { CredentialState, PoolMember } from './credential-pool.ts';

/** Where a pool's status is kept: read once when the pool is made, written as it changes. */
export interface CredentialsStatusStore {
  read(namespace: string, name: string): readonly CredentialState[] | Promise<readonly CredentialState[]>;
  write(namespace: string, name: string, credentials: readonly CredentialState[], now: Date): void | Promise<void>;
}

/** The timers of the coalescing (core/clock.ts's Clock fits; the gateway layer sits below core). */
interface Clock {
  now(): Date;
  setTimer(fn: () => void, delayMs: number): Timer;
}
interface Timer {
  cancel(): void;
}

const realTimers: Clock = {
  now: () => new Date(),
  setTimer(fn, delayMs) {
    const handle = setTimeout(fn, delayMs);
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};

interface Entry {
  namespace: string;
  name: string;
  pool: CredentialPool;
  missing: ReadonlySet<string>;
  dirty: boolean;
  urgent: boolean;
  inFlight: boolean;
  lastAt?: number;
  timer?: Timer;
}

export interface CredentialPoolsOptions {
  store: CredentialsStatusStore;
  /** The clock of pauses (tests inject one). */
  now: () => Date;
  /** The clock of the coalescing timers (a rate bound, not a deadline): real time unless told. */
  timers?: Clock;
  metrics?: GatewayMetrics;
  onWriteError?: (key: string, err: unknown) => void;
}

export class CredentialPools {
  private readonly entries = new Map<string, Promise<Entry>>();
  private readonly loaded = new Map<string, Entry>();
  private readonly listeners: Array<(namespace: string, name: string) => void> = [];
  private readonly opts: CredentialPoolsOptions;
  private readonly timers: Clock;

  constructor(opts: CredentialPoolsOptions) {
    this.opts = opts;
    this.timers = opts.timers ?? realTimers;
  }

  /** A pool's pauses changed: the tasks using it are looked at again (the controller loop subscribes). */
  readonly pauses = {
    subscribe: (fn: (namespace: string, name: string) => void) => void this.listeners.push(fn),
  };

  /** The pool of namespace/name with these members (made with its kept status the first time). */
  async pool(namespace: string, name: string, members: readonly PoolMember[]): Promise<CredentialPool> {
    const key = `${namespace}/${name}`;
    let made = this.entries.get(key);
    if (!made) {
      made = this.make(namespace, name, members);
      this.entries.set(key, made);
      made.catch(() => this.entries.delete(key)); // a failed read is tried again on the next use
    }
    const entry = await made;
    entry.pool.update(members);
    return entry.pool;
  }

  /** A pool already made (no read). */
  loadedPool(namespace: string, name: string): CredentialPool | undefined {
    return this.loaded.get(`${namespace}/${name}`)?.pool;
  }

  /** The credentials whose value the controller could not read: Missing in the status. */
  setMissing(namespace: string, name: string, missing: readonly string[]): void {
    const entry = this.loaded.get(`${namespace}/${name}`);
    if (entry) entry.missing = new Set(missing);
  }

  /** The status changed: written at once when `urgent` (a pause), else at most once per interval. */
  changed(namespace: string, name: string, urgent = false): void {
    const entry = this.loaded.get(`${namespace}/${name}`);
    if (!entry) return;
    entry.dirty = true;
    entry.urgent ||= urgent;
    this.opts.metrics?.setPaused(`${namespace}/${name}`, name, entry.pool.status(this.opts.now(), entry.missing));
    this.schedule(entry);
  }

  /** Everything pending goes out now (shutdown). */
  async flush(): Promise<void> {
    for (const entry of this.loaded.values()) {
      entry.timer?.cancel();
      entry.timer = undefined;
      if (entry.dirty && !entry.inFlight) await this.write(entry);
    }
  }

  private async make(namespace: string, name: string, members: readonly PoolMember[]): Promise<Entry> {
    const restored = await this.opts.store.read(namespace, name);
    const entry: Entry = {
      namespace,
      name,
      missing: new Set(),
      dirty: false,
      urgent: false,
      inFlight: false,
      pool: new CredentialPool(members, restored, () => {
        this.changed(namespace, name, true);
        for (const fn of this.listeners) fn(namespace, name);
      }),
    };
    this.loaded.set(`${namespace}/${name}`, entry);
    this.opts.metrics?.setPaused(`${namespace}/${name}`, name, entry.pool.status(this.opts.now()));
    return entry;
  }

  private schedule(entry: Entry): void {
    if (!entry.dirty) return;
    const next = statusWriteDelay({
      urgent: entry.urgent,
      inFlight: entry.inFlight,
      lastAt: entry.lastAt,
      now: this.timers.now().getTime(),
    });
    if (next.kind === 'wait') return;
    if (next.delayMs === 0) {
      entry.timer?.cancel();
      entry.timer = undefined;
      void this.write(entry);
    } else
      entry.timer ??= this.timers.setTimer(() => {
        entry.timer = undefined;
        void this.write(entry);
      }, next.delayMs);
  }

  private async write(entry: Entry): Promise<void> {
    entry.inFlight = true;
    entry.dirty = false;
    entry.urgent = false;
    entry.lastAt = this.timers.now().getTime();
    const now = this.opts.now();
    try {
      await this.opts.store.write(entry.namespace, entry.name, entry.pool.status(now, entry.missing), now);
    } catch (err) {
      entry.dirty = true; // tried again at the next interval
      this.opts.onWriteError?.(`${entry.namespace}/${entry.name}`, err);
    } finally {
      entry.inFlight = false;
    }
    this.schedule(entry);
  }
}
