// A keyed work queue with client-go's guarantees: a key queued many times is processed once, a key is
// never processed by two workers at once (added while in flight → processed again afterwards), delayed
// adds for requeue-after, and per-key exponential backoff for failed reconciles.

import { retryDelayMs } from '../util/retry-delay.ts';
import { systemClock } from './clock.ts';
import type { Clock, Timer } from './clock.ts';

export type Handler = (key: string) => Promise<void>;

export interface WorkQueueOptions {
  /** Workers processing different keys in parallel. */
  concurrency?: number;
  /** Per-key failure backoff: base * 2^failures, capped. */
  baseRetryMs?: number;
  maxRetryMs?: number;
  onError?: (key: string, err: unknown) => void;
  clock?: Clock;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  /** Keys added with addFirst: processed before anything in `queue`. */
  private readonly urgent: string[] = [];
  private readonly queued = new Set<string>();
  private readonly inFlight = new Set<string>();
  private readonly dirtyWhileInFlight = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: Timer }>();
  private readonly failures = new Map<string, number>();
  private active = 0;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];
  private readonly concurrency: number;
  private readonly baseRetryMs: number;
  private readonly maxRetryMs: number;
  private readonly clock: Clock;

  private readonly handler: Handler;
  private readonly opts: WorkQueueOptions;

  constructor(handler: Handler, opts: WorkQueueOptions = {}) {
    this.handler = handler;
    this.opts = opts;
    this.concurrency = Math.max(1, opts.concurrency ?? 1);
    this.baseRetryMs = opts.baseRetryMs ?? 5;
    this.maxRetryMs = opts.maxRetryMs ?? 60_000;
    this.clock = opts.clock ?? systemClock;
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.inFlight.has(key)) {
      this.dirtyWhileInFlight.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.pump();
  }

  /**
   * Like add, but ahead of everything queued with add (moved there if already queued): for news that must
   * be recorded before more work is started, such as an episode's end.
   */
  addFirst(key: string): void {
    if (this.stopped) return;
    if (this.inFlight.has(key)) {
      this.dirtyWhileInFlight.add(key);
      return;
    }
    if (this.queued.has(key)) {
      if (this.urgent.includes(key)) return;
      this.queue.splice(this.queue.indexOf(key), 1);
    }
    this.queued.add(key);
    this.urgent.push(key);
    this.pump();
  }

  /** Process key after delayMs; an earlier pending timer for the key wins (like client-go's AddAfter). */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = this.clock.now().getTime() + delayMs;
    const existing = this.timers.get(key);
    if (existing && existing.at <= at) return;
    existing?.timer.cancel();
    const timer = this.clock.setTimer(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    this.timers.set(key, { at, timer });
  }

  /** Requeue after a failure with exponential backoff for this key. */
  addRateLimited(key: string): void {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    // No jitter: a reconcile fails for a reason of its own, not with a crowd (client-go does the same).
    this.addAfter(key, retryDelayMs({ initialMs: this.baseRetryMs, factor: 2, maxMs: this.maxRetryMs }, n, 1));
  }

  /** The key reconciled cleanly: reset its failure backoff. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Keys waiting for a timer (requeue-after or retry backoff). */
  get delayed(): number {
    return this.timers.size;
  }

  get length(): number {
    return this.queue.length + this.urgent.length;
  }

  /** Resolves when nothing is queued or in flight (delayed adds don't count). */
  idle(): Promise<void> {
    if (this.length === 0 && this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const { timer } of this.timers.values()) timer.cancel();
    this.timers.clear();
    this.queue.length = 0;
    this.urgent.length = 0;
    this.queued.clear();
  }

  private pump(): void {
    while (this.active < this.concurrency && this.length > 0) {
      const key = (this.urgent.length > 0 ? this.urgent.shift() : this.queue.shift()) as string;
      this.queued.delete(key);
      this.inFlight.add(key);
      this.active++;
      void this.run(key);
    }
    if (this.active === 0 && this.length === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private async run(key: string): Promise<void> {
    try {
      await this.handler(key);
    } catch (err) {
      this.opts.onError?.(key, err);
      if (!this.stopped) this.addRateLimited(key);
    } finally {
      this.inFlight.delete(key);
      this.active--;
      if (this.dirtyWhileInFlight.delete(key)) this.add(key);
      this.pump();
    }
  }
}
