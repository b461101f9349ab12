// A trigger's pass follows its tasks: when a task it created changes phase (Pending → Running → Succeeded…),
// the trigger's next pass is now instead of at its next poll or tick (which moves wake which trigger:
// reconciler/trigger-timing.ts wakeOnPhase). Both modes feed it the phases they see (local: after each
// reconcile pass; cluster: the AgentTask informer's updates).
import { TRIGGER_LABEL } from '../../api/agent-trigger.ts';
import { wakeOnPhase } from '../../reconciler/trigger-timing.ts';
import type { TriggerTimers } from './local-triggers.ts';

export class PhaseWakes {
  private readonly timers: TriggerTimers;
  /** namespace/task → the phase last seen. */
  private readonly phases = new Map<string, string | undefined>();

  constructor(timers: TriggerTimers) {
    this.timers = timers;
  }

  /** A task's phase now; wakes its trigger when the phase moved since last seen (wakeOnPhase). */
  seen(namespace: string, name: string, labels: Readonly<Record<string, string>> | undefined, phase?: string): void {
    const trigger = labels?.[TRIGGER_LABEL];
    if (!trigger) return;
    const key = `${namespace}/${name}`;
    const before = { seen: this.phases.has(key), phase: this.phases.get(key) };
    this.phases.set(key, phase);
    const triggerKey = `${namespace}/${trigger}`;
    if (wakeOnPhase(before, phase, this.timers.trigger(triggerKey)?.spec)) this.timers.wake(triggerKey);
  }

  forget(namespace: string, name: string): void {
    this.phases.delete(`${namespace}/${name}`);
  }
}
