// Where a task's new relay comes from, and whether a spare is kept started beside (README "Sandbox"): pure
// rules of what the holder knows, table-tested; relay-holder.ts carries them out.

/** The spare relay: none, starting (spawned, not yet "spare"), or started and bound to no task. */
export type SpareState = 'none' | 'starting' | 'started';

export interface SpareFacts {
  spare: SpareState;
  /** The spare runs what this request's relay would (the same bwrap, Node and script, mounts). */
  sameBase: boolean;
}

/** A task's new relay: the spare when it runs the same (a starting one is ahead of a new start), else a new one. */
export function relaySource(facts: SpareFacts): 'take-spare' | 'start' {
  return facts.spare !== 'none' && facts.sameBase ? 'take-spare' : 'start';
}

export interface KeepFacts {
  spare: SpareState;
  /** Tasks with a relay started or starting (sandboxed, network gateway). */
  gatewayTasks: number;
}

/**
 * One spare while the controller has gateway tasks, so the next task's first episode need not wait for a Node
 * start; none otherwise (no idle relay for a controller that never sandboxes, or whose tasks are done).
 */
export function spareAction(facts: KeepFacts): 'start' | 'end' | 'keep' {
  if (facts.gatewayTasks > 0) return facts.spare === 'none' ? 'start' : 'keep';
  return facts.spare === 'none' ? 'keep' : 'end';
}
