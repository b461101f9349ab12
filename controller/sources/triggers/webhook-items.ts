// A webhook source's items: a delivery, and the held ones (maxConcurrency) a later pass creates when a slot
// frees. planWithHeld (reconciler/trigger-held.ts) decides; this persists the held list and carries it out.
import type { AgentTriggerStatus } from '../../api/agent-trigger.ts';
import type { ExistingTask, ItemRules, ItemSeen, PermissionOf, PlannedTask } from '../../reconciler/trigger-items.ts';
import { planWithHeld } from '../../reconciler/trigger-held.ts';
import { activeAfter, addSkips, triggerLimits } from '../../reconciler/trigger-items.ts';
import type { RunnableTrigger } from './trigger-runner.ts';

/** What carrying out a plan needs from the runner. */
export interface WebhookPlanPort {
  existing(trigger: RunnableTrigger): Promise<ExistingTask[]>;
  createAll(trigger: RunnableTrigger, create: PlannedTask[], status: AgentTriggerStatus): Promise<void>;
  log(fields: Record<string, unknown>, message: string): void;
}

/** lastError while items were dropped past the held cap (until the held backlog drains). */
export function heldOverflowError(status: AgentTriggerStatus): string | undefined {
  const n = status.heldOverflow ?? 0;
  return n > 0 ? `${n} webhook item(s) held back past the cap were dropped: deliver them again` : undefined;
}

/** Plans `seen` with the held items, creates what has room and records what still waits in status. */
export async function createWebhookItems(
  port: WebhookPlanPort,
  trigger: RunnableTrigger,
  seen: ItemSeen[],
  rules: ItemRules,
  permissionOf: PermissionOf,
  status: AgentTriggerStatus,
): Promise<void> {
  const existing = await port.existing(trigger);
  const plan = planWithHeld({
    trigger: trigger.name,
    seen,
    held: status.heldItems ?? [],
    existing,
    rules,
    permissionOf,
    ...triggerLimits(trigger.spec, status.tasksCreated, existing),
  });
  if (plan.held.length > 0) port.log({ held: plan.held.map((h) => h.number) }, 'webhook items held for a slot');
  await port.createAll(trigger, plan.create, status);
  status.heldItems = plan.held.length > 0 ? plan.held : undefined;
  if (plan.overflow > 0) port.log({ dropped: plan.overflow }, 'webhook items past the held cap dropped');
  // Counted until the backlog drains, so lastError names the loss while it matters.
  status.heldOverflow = plan.held.length > 0 ? (status.heldOverflow ?? 0) + plan.overflow || undefined : undefined;
  status.tasksActive = activeAfter(existing, plan.create.length);
  status.itemsSkipped = addSkips(status.itemsSkipped, plan.skipped);
}
