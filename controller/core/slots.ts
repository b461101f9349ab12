// --max-concurrent as the loop keeps it: episodes running (the executor's count) plus starts decided but not
// yet carried out, and the tasks whose last pass found no free slot, longest waiting first.
export class Slots {
  private readonly max: number;
  private readonly running: () => number;
  private reserved = 0;
  private readonly waiters = new Set<string>();

  constructor(max: number, running: () => number) {
    this.max = max;
    this.running = running;
  }

  /** Slots free now; none while the loop stops. */
  free(stopping: boolean): number {
    return stopping ? 0 : Math.max(0, this.max - this.running() - this.reserved);
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
