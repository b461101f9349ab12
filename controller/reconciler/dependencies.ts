// dependsOn: pure graph checks shared by local and cluster mode.
import type { AgentTaskStatus, Phase } from '../api/agent-task.ts';
import { awaitingAutoResume } from './resume.ts';

/** What the loop knows of one dependency: its phase, and whether an auto-resume of it is scheduled. */
export interface DependencyFact {
  phase: Phase;
  awaitingAutoResume: boolean;
}

export type DependencyVerdict =
  | { kind: 'ready' }
  | { kind: 'pending'; waitingOn: string[] }
  | { kind: 'failed'; failed: string[] };

const FAILED: readonly Phase[] = ['Failed', 'Skipped', 'NeedsReview'];

/** The fact of a dependency that exists, from its recorded status (none yet: Pending). */
export function dependencyFact(status: AgentTaskStatus | undefined): DependencyFact {
  return { phase: status?.phase ?? 'Pending', awaitingAutoResume: awaitingAutoResume(status) };
}

/** facts: each dependency as the loop saw it, undefined when it does not exist (yet). */
export function judgeDependencies(
  dependsOn: string[],
  facts: Record<string, DependencyFact | undefined>,
): DependencyVerdict {
  // A dependency stopped for review with an auto-resume scheduled has not failed yet: its dependents wait.
  const failed = dependsOn.filter((d) => {
    const fact = facts[d];
    return fact !== undefined && !fact.awaitingAutoResume && FAILED.includes(fact.phase);
  });
  if (failed.length > 0) return { kind: 'failed', failed };
  const waitingOn = dependsOn.filter((d) => facts[d]?.phase !== 'Succeeded');
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

/** A dependsOn walk stops here: a cycle check must not stall on a pathological graph. */
export const MAX_GRAPH_NODES = 10_000;

/**
 * The cycle through `start`, walking the graph from it through `dependsOnOf` (undefined: no such task); the
 * one check of the loop, `episodic run` and `episodic validate`.
 */
export function cycleThrough(
  start: string,
  dependsOnOf: (name: string) => readonly string[] | undefined,
  maxNodes = MAX_GRAPH_NODES,
): string[] | undefined {
  const graph: Record<string, string[]> = {};
  const todo = [start];
  let nodes = 0;
  while (todo.length > 0 && nodes++ < maxNodes) {
    const node = todo.pop() as string;
    if (graph[node]) continue;
    graph[node] = [...(dependsOnOf(node) ?? [])];
    todo.push(...graph[node]);
  }
  return findCycle(start, graph);
}

/** The one message of a dependsOn cycle, in status and in validate: ["a", "a"] is the task naming itself. */
export function cycleMessage(cycle: readonly string[]): string {
  return cycle.length === 2 && cycle[0] === cycle[1]
    ? `spec.dependsOn: names the task itself`
    : `spec.dependsOn: a cycle ${cycle.join(' → ')}`;
}
