// What the loop remembers of each task between its passes, beside the status: facts reconcile() reads that no
// port holds (a stop it asked for, a start to retry, the ops it applied, a best-of-N adoption's outcome).
// Kept in memory only: a restarted controller finds them out again (status, records, the executor).
import type { AdoptOutcome } from '../api/attempts.ts';
import type { ApplyRejection } from '../api/ops.ts';
import type { ReconcileInput, StopReason } from '../reconciler/reconcile.ts';

type RememberedFacts = Pick<ReconcileInput, 'stopRequested' | 'startToRetry' | 'opsApplied' | 'opsRefused'>;

export class LoopMemory {
  /** The episode a StopEpisode was performed for, until the task has no current episode. */
  readonly stops = new Map<string, { number: number; reason: StopReason }>();
  /** Episodes on record whose start failed with an error worth retrying: started again, never renumbered. */
  readonly pendingStarts = new Map<string, number>();
  /** Task key → the newest episode whose ops this controller applied (ReconcileInput.opsApplied). */
  readonly opsApplied = new Map<string, { episode: number; refused: ApplyRejection[] }>();
  /** Best-of-N: the outcome of each task's last AdoptWinner (lost on a restart, which carries it out again). */
  readonly adopted = new Map<string, AdoptOutcome>();

  /** The task's remembered facts for its next pass. */
  facts(key: string): RememberedFacts {
    return {
      stopRequested: this.stops.get(key),
      startToRetry: this.pendingStarts.get(key),
      opsApplied: this.opsApplied.get(key)?.episode,
      opsRefused: this.opsApplied.get(key)?.refused,
    };
  }

  /** The task is gone for good: nothing of it stays. */
  forget(key: string): void {
    this.stops.delete(key);
    this.pendingStarts.delete(key);
    this.opsApplied.delete(key);
    this.adopted.delete(key);
  }
}
