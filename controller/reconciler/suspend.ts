// Suspended: `spec.suspend || hold`, the one home for that predicate. The hold is a person's (the console,
// `episodic suspend`); it is not spec, so lifting it cannot override spec.suspend: true. Setting or lifting
// it goes into the audit trail once: its last Suspended/Unsuspended entry is what the trail knows of it.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import type { SuspendHold } from '../api/hold.ts';
import { audit } from './resume.ts';
import { normal } from './actions.ts';
import type { Events } from './actions.ts';

/** Why the task is suspended, in words for status.message; undefined when it is not. */
export function suspendedBecause(
  spec: Pick<AgentTaskSpec, 'suspend'>,
  hold: SuspendHold | undefined,
): string | undefined {
  const held = hold?.suspended === true;
  if (spec.suspend && held) return `suspended by spec.suspend and by ${hold.by}`;
  if (spec.suspend) return 'suspended';
  if (held) return `suspended by ${hold.by}`;
  return undefined;
}

/** An audit entry and an event when the hold was set or lifted since the trail last said. */
export function auditHold(
  status: AgentTaskStatus,
  hold: SuspendHold | undefined,
  specSuspend: boolean,
  now: Date,
): { status: AgentTaskStatus; events: Events } {
  const last = (status.audit ?? []).findLast((a) => a.action === 'Suspended' || a.action === 'Unsuspended');
  const held = hold?.suspended === true;
  if (held === (last?.action === 'Suspended')) return { status, events: [] };
  const at = now.toISOString();
  const by = `user:${hold?.by ?? 'unknown'}`;
  if (held) {
    const message = `suspended by ${hold.by}`;
    return { status: audit(status, { at, action: 'Suspended', by, message }), events: [normal('Suspended', message)] };
  }
  const message = specSuspend ? 'hold lifted; spec.suspend: true still suspends the task' : 'hold lifted';
  return {
    status: audit(status, { at, action: 'Unsuspended', by, message }),
    events: [normal('Unsuspended', message)],
  };
}
