// metav1.Condition bookkeeping: lastTransitionTime moves only when status flips, as in apimachinery's
// meta.SetStatusCondition, so watchers can tell "changed" from "re-asserted".
import type { AgentTaskStatus, Condition, Phase } from '../api/agent-task.ts';

type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

export function setCondition(conditions: Condition[], next: ConditionInput, now: string): Condition[] {
  const existing = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = existing && existing.status === next.status ? existing.lastTransitionTime : now;
  const merged: Condition = { ...next, lastTransitionTime };
  return [...conditions.filter((c) => c.type !== next.type), merged].sort((a, b) => a.type.localeCompare(b.type));
}

/** Ready: the task reached its goal. Progressing: an episode runs or will run without a human. */
export function conditionsFor(status: AgentTaskStatus, generation: number | undefined, now: string): Condition[] {
  const phase: Phase = status.phase ?? 'Pending';
  const reason = status.reason ?? phase;
  const message = status.message ?? '';
  const progressing = phase === 'Pending' || phase === 'Running' || phase === 'Waiting';
  let conditions = setCondition(
    status.conditions,
    {
      type: 'Ready',
      status: phase === 'Succeeded' ? 'True' : 'False',
      reason,
      message,
      observedGeneration: generation,
    },
    now,
  );
  conditions = setCondition(
    conditions,
    { type: 'Progressing', status: progressing ? 'True' : 'False', reason, message, observedGeneration: generation },
    now,
  );
  return conditions;
}
