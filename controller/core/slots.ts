// --max-concurrent as the loop keeps it: episodes running (the executor's count), starts decided but not yet
// carried out and slots lent to resolution episodes (what is free is reconciler/slots.ts's rule), and the tasks
// whose last pass found no free slot, longest waiting first.
import { freeSlots } from '../reconciler/slots.ts';

export class Slots {
  private readonly max: number;
  private readonly running: () => number;
  private reserved = 0;
  /** Slots lent to agents run outside a task's pass (the merge queue's resolution episodes). */
  private lent = 0;
  private readonly waiters = new Set<string>();

  constructor(max: number, running: () => number) {
    this.max = max;
    this.running = running;
  }

  /** Slots free now; none while the loop stops. */
  free(stopping: boolean): number {
    return freeSlots({
      maxConcurrent: this.max,
      episodes: this.running(),
      reserved: this.reserved,
      resolutions: this.lent,
      stopping,
    });
  }

  lend(): void {
    this.lent++;
  }

  giveBack(): void {
    this.lent--;
  }

  /** A pass decided a start: the slot is taken before its first await, so parallel passes see it. */
  reserve(): void {
    this.reserved++;
  }

  unreserve(): void {
    this.reserved--;
  }

  get anyReserved(): boolean {
    return this.reserved > 0;
  }

  /** Whether the task's last pass waits only for a slot. */
  setWaiting(key: string, waits: boolean): void {
    if (waits) this.waiters.add(key);
    else this.waiters.delete(key);
  }

  waiting(): string[] {
    return [...this.waiters];
  }

  /** As many waiting tasks as there are free slots, oldest first, no longer waiting. */
  takeWaiters(stopping: boolean): string[] {
    const taken = [...this.waiters].slice(0, this.free(stopping));
    for (const key of taken) this.waiters.delete(key);
    return taken;
  }
}
