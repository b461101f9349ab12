// When `episodic run` is done: nothing is busy or running, and every task is finished or stuck on something
// only an edit can change. Pure: the loop gathers the facts.
import { isTerminal } from '../api/agent-task.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { awaitingAutoResume } from './resume.ts';

export interface TaskSettleFacts {
  /** The status on record; undefined when none was written yet. */
  status: AgentTaskStatus | undefined;
  /** Some dependsOn entry names a task that does not exist. */
  dependencyMissing: boolean;
}

export interface SettleFacts {
  /** Work queued, being reconciled, or a slot reserved for a start. */
  busy: boolean;
  runningEpisodes: number;
  /** Every task of the source; read only as far as needed. */
  tasks: Iterable<TaskSettleFacts>;
}

/** A task that needs nothing more from this run: terminal, suspended, or waiting for a task nobody defined. */
export function taskSettled(task: TaskSettleFacts): boolean {
  const status = task.status;
  // A scheduled auto-resume is waited for (its cooldown); a held one leaves the task settled.
  if (isTerminal(status?.phase) && !awaitingAutoResume(status)) return true;
  if (status?.phase === 'Suspended') return true;
  return status?.reason === 'DependenciesPending' && task.dependencyMissing;
}

export function settled(facts: SettleFacts): boolean {
  if (facts.busy || facts.runningEpisodes > 0) return false;
  for (const task of facts.tasks) if (!taskSettled(task)) return false;
  return true;
}
