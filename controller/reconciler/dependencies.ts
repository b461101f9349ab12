// dependsOn: pure graph checks shared by local and cluster mode.
import type { Phase } from '../api/agent-task.ts';

export type DependencyVerdict =
  | { kind: 'ready' }
  | { kind: 'pending'; waitingOn: string[] }
  | { kind: 'failed'; failed: string[] };

/** phases: the current phase of each dependency, undefined when it does not exist (yet). */
export function judgeDependencies(dependsOn: string[], phases: Record<string, Phase | undefined>): DependencyVerdict {
  const failed = dependsOn.filter((d) => ['Failed', 'Skipped', 'NeedsReview'].includes(phases[d] ?? ''));
  if (failed.length > 0) return { kind: 'failed', failed };
  const waitingOn = dependsOn.filter((d) => phases[d] !== 'Succeeded');
  if (waitingOn.length > 0) return { kind: 'pending', waitingOn };
  return { kind: 'ready' };
}

/**
 * Returns the cycle through `start` (e.g. ["a", "b", "a"]) or undefined. graph maps a task name to its
 * dependsOn within one namespace; unknown names are leaves.
 */
export function findCycle(start: string, graph: Record<string, string[] | undefined>): string[] | undefined {
  const path: string[] = [];
  const done = new Set<string>();
  const visit = (node: string): string[] | undefined => {
    const at = path.indexOf(node);
    if (at >= 0) return [...path.slice(at), node];
    if (done.has(node)) return undefined;
    path.push(node);
    for (const next of graph[node] ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    done.add(node);
    return undefined;
  };
  const cycle = visit(start);
  return cycle?.includes(start) ? cycle : undefined;
}
