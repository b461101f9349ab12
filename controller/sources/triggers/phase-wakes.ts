// A trigger's pass follows its tasks: when a task it created changes phase (Pending → Running → Succeeded…),
// the trigger's next pass is now instead of at its next poll or tick (which moves wake which trigger:
// reconciler/trigger-schedule.ts phaseWakesTrigger). Both modes feed it the phases they see (local: after each
// reconcile pass; cluster: the AgentTask informer's updates).
import type { Phase } from '../../api/agent-task-status.ts';
import { TRIGGER_LABEL } from '../../api/agent-trigger.ts';
import { phaseWakesTrigger } from '../../reconciler/trigger-schedule.ts';
import type { TriggerTimers } from './local-triggers.ts';

export class PhaseWakes {
  private readonly timers: TriggerTimers;
  /** namespace/task → the phase last seen. */
  private readonly phases = new Map<string, string | undefined>();

  constructor(timers: TriggerTimers) {
    this.timers = timers;
  }

  /** A task's phase now; wakes its trigger (spec.report or a webhook source) when the phase moved since last seen. */
  seen(namespace: string, name: string, labels: Readonly<Record<string, string>> | undefined, phase?: string): void {
    const trigger = labels?.[TRIGGER_LABEL];
    if (!trigger) return;
    const key = `${namespace}/${name}`;
    const known = this.phases.has(key);
    const before = this.phases.get(key);
    this.phases.set(key, phase);
    // First sight (a start, a new task) records only: the trigger's own pass reports it.
    if (!known || before === phase) return;
    const triggerKey = `${namespace}/${trigger}`;
    const spec = this.timers.trigger(triggerKey)?.spec;
    if (spec && phaseWakesTrigger(spec, phase as Phase | undefined)) this.timers.wake(triggerKey);
  }

  forget(namespace: string, name: string): void {
    this.phases.delete(`${namespace}/${name}`);
  }
}
