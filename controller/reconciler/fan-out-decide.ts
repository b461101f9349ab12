// Where a forEach step and best-of-N attempts enter reconcile()'s decision: in place of an episode's start,
// once dependencies are met. Both run child tasks instead of an episode of their own.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { RUNNING_RECHECK_MS } from './budget.ts';
import { fanOutPass } from './fan-out.ts';
import { attemptsPass } from './attempts.ts';
import type { Action, Events } from './actions.ts';
import type { ReconcileInput } from './types.ts';

/** The pass of a task in a forEach step, or undefined for any other task. */
export function fanOutDecision(
  status: AgentTaskStatus,
  input: ReconcileInput,
): { status: AgentTaskStatus; actions: Action[]; events: Events; requeueAfterMs?: number } | undefined {
  const step = status.step && input.spec?.steps?.[status.step.index - 1];
  if (!input.spec || !(step?.forEach || step?.attempts || input.spec.attempts)) return undefined;
  if (!input.spawn) {
    const message = 'forEach and attempts need a controller that creates child tasks';
    return { status: { ...status, phase: 'Failed', reason: 'ForEachUnsupported', message }, actions: [], events: [] };
  }
  const facts = { task: input.name, labels: input.labels, spec: input.spec, status, children: input.spawn.children };
  const pass =
    attemptsPass({
      ...facts,
      create: !input.shuttingDown,
      adoption: input.adoption,
      diffs: input.attemptDiffs,
      now: input.now,
    }) ??
    fanOutPass({
      task: input.name,
      labels: input.labels,
      spec: input.spec,
      status,
      children: input.spawn.children,
      create: !input.shuttingDown,
      now: input.now,
    });
  // Woken when a child's phase changes (spawn-loop.ts); the recheck is the safety net. A next step starts at once.
  // An AdoptWinner's outcome is read by the very next pass.
  const now = pass.status.phase === 'Pending' || pass.status.reason === 'AttemptAdopting';
  const requeueAfterMs = now ? 0 : pass.status.phase === 'Waiting' ? RUNNING_RECHECK_MS : undefined;
  return { ...pass, requeueAfterMs };
}
