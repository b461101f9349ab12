// Client-side QPS limit (a token bucket, like client-go's --kube-api-qps/--kube-api-burst) with two
// lanes: "work" (creating and deleting episode pods, lists, watches) and "bookkeeping" (status,
// finalizers, events). When both wait, work goes first, except that every Nth token goes to bookkeeping
// so status never starves during a flood of new tasks.

export type Lane = 'work' | 'bookkeeping';

export interface RateLimiterOptions {
  /** Tokens per second; 0 or less disables the limit. */
  qps: number;
  burst: number;
  /** While both lanes wait, bookkeeping gets one token in this many. */
  bookkeepingShare?: number;
}

export class RateLimiter {
  private tokens: number;
  private last = Date.now();
  private readonly waiting: Record<Lane, Array<() => void>> = { work: [], bookkeeping: [] };
  private timer: NodeJS.Timeout | undefined;
  private sinceBookkeeping = 0;
  private readonly opts: RateLimiterOptions;

  constructor(opts: RateLimiterOptions) {
    this.opts = opts;
    this.tokens = Math.max(1, opts.burst);
  }

  get unlimited(): boolean {
    return !(this.opts.qps > 0);
  }

  /** Resolves when the caller may send one request. */
  take(lane: Lane): Promise<void> {
    if (this.unlimited) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiting[lane].push(resolve);
      this.drain();
    });
  }

  /** Requests waiting for a token, per lane (for logs and tests). */
  pending(): Record<Lane, number> {
    return { work: this.waiting.work.length, bookkeeping: this.waiting.bookkeeping.length };
  }

  private refill(): void {
    const now = Date.now();
    this.tokens = Math.min(Math.max(1, this.opts.burst), this.tokens + ((now - this.last) / 1000) * this.opts.qps);
    this.last = now;
  }

  private next(): (() => void) | undefined {
    const share = this.opts.bookkeepingShare ?? 10;
    const { work, bookkeeping } = this.waiting;
    if (work.length > 0 && (bookkeeping.length === 0 || this.sinceBookkeeping < share - 1)) {
      this.sinceBookkeeping++;
      return work.shift();
    }
    this.sinceBookkeeping = 0;
    return bookkeeping.shift();
  }

  private drain(): void {
    this.refill();
    while (this.tokens >= 1) {
      const resolve = this.next();
      if (!resolve) return;
      this.tokens -= 1;
      resolve();
    }
    if (this.timer || (this.waiting.work.length === 0 && this.waiting.bookkeeping.length === 0)) return;
    const waitMs = Math.max(1, Math.ceil(((1 - this.tokens) / this.opts.qps) * 1000));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.drain();
    }, waitMs);
  }
}
