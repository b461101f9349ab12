// Time as an input: the controller loop and its work queue read the clock and set timers only through
// this, so tests drive them with a virtual clock instead of sleeping.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  now(): Date;
  /** Runs fn once, delayMs from now; never keeps the process alive on its own. */
  setTimer(fn: () => void, delayMs: number): Timer;
}

// setTimeout overflows above 2^31-1 ms and would fire at once; longer waits re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => new Date(),
  setTimer(fn, delayMs) {
    let handle: NodeJS.Timeout;
    const arm = (remaining: number) => {
      handle = setTimeout(
        () => (remaining > MAX_TIMER_MS ? arm(remaining - MAX_TIMER_MS) : fn()),
        Math.min(Math.max(remaining, 0), MAX_TIMER_MS),
      );
      handle.unref();
    };
    arm(delayMs);
    return { cancel: () => clearTimeout(handle) };
  },
};

/** A clock that only moves when told to: timers fire, in order, as advance() passes them. */
export class ManualClock implements Clock {
  private ms: number;
  private timers: Array<{ at: number; seq: number; fn: () => void }> = [];
  private seq = 0;

  constructor(start = new Date('2026-01-01T00:00:00Z')) {
    this.ms = start.getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  setTimer(fn: () => void, delayMs: number): Timer {
    const entry = { at: this.ms + Math.max(0, delayMs), seq: this.seq++, fn };
    this.timers.push(entry);
    return { cancel: () => (this.timers = this.timers.filter((t) => t !== entry)) };
  }

  /** Timers still armed, earliest first (what a test may assert about "nothing will happen before…"). */
  pending(): number[] {
    return this.timers.map((t) => t.at - this.ms).sort((a, b) => a - b);
  }

  /** Moves time forward by ms, firing every timer due on the way. */
  advance(ms: number): void {
    const end = this.ms + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.ms = Math.max(this.ms, due.at);
      due.fn();
    }
    this.ms = end;
  }
}

/** Resolves `ms` from now on `clock` (a ManualClock: once advanced past it); rejects with the reason if `signal` aborts. */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
