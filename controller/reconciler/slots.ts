// --max-concurrent is a bound on agents running at once, whatever runs them: a task's own episodes, the
// episodes whose start a pass reserved, and the merge queue's resolution episodes (an agent like any other, so
// a user who set --max-concurrent 2 never sees a third). Pure: the loop counts them, this says what is free.

export interface SlotFacts {
  /** --max-concurrent. */
  maxConcurrent: number;
  /** Episodes of tasks the executor runs now. */
  episodes: number;
  /** Starts decided by a pass and not yet running. */
  reserved: number;
  /** The merge queues' resolution episodes holding a slot. */
  resolutions: number;
  /** The controller stops: nothing new starts, resolution episodes included. */
  stopping: boolean;
}

/** Slots free for one more agent: a task's episode or a resolution episode alike. */
export function freeSlots(f: SlotFacts): number {
  if (f.stopping) return 0;
  return Math.max(0, f.maxConcurrent - f.episodes - f.reserved - f.resolutions);
}
