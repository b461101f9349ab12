// Webhook items held back by maxConcurrency: a webhook source has no poll to see them again, so the trigger
// remembers them in its status (bounded) and plans them beside the next delivery or on its next pass.
// Pure: which of the held and newly delivered items become tasks now, in item order, and which stay held.
import type { AgentTriggerStatus, HeldItem, ItemsSkipped } from '../api/agent-trigger.ts';
import { HELD_ITEMS_MAX, ITEM_TEXT_MAX } from '../api/agent-trigger.ts';
import type { Permission } from '../api/agent-trigger.ts';
import type { ForgeComment, ForgeItem } from '../api/forge-item.ts';
import type { ItemSeen, PlanItemsInput, PlannedTask } from './trigger-items.ts';
import { countSkips, judgeItem, planItem, roomFor } from './trigger-items.ts';

export interface HeldPlan {
  create: PlannedTask[];
  /** Still waiting for a slot, lowest item number first, at most HELD_ITEMS_MAX. */
  held: HeldItem[];
  /** Waiting items that did not fit in `held`: they are lost until the forge delivers them again. */
  overflow: number;
  /** Delivered items that got no task, by reason. */
  skipped: ItemsSkipped;
}

/** An item as the status keeps it: the fields the template and the task's branch need, its text bounded. */
export function toHeld(p: PlannedTask): HeldItem {
  const { item, comment } = p;
  return {
    number: item.number,
    title: item.title.slice(0, ITEM_TEXT_MAX.title),
    body: item.body.slice(0, ITEM_TEXT_MAX.body),
    url: item.url.slice(0, ITEM_TEXT_MAX.url),
    author: item.author.slice(0, ITEM_TEXT_MAX.author),
    labels: item.labels.slice(0, ITEM_TEXT_MAX.labelCount).map((l) => l.slice(0, ITEM_TEXT_MAX.label)),
    ...(item.isPullRequest ? { pullRequest: true } : {}),
    ...(item.headBranch ? { headBranch: item.headBranch.slice(0, ITEM_TEXT_MAX.branch) } : {}),
    ...(comment ? { comment: heldComment(comment) } : {}),
  };
}

function heldComment(c: ForgeComment): NonNullable<HeldItem['comment']> {
  return { id: c.id, author: c.author.slice(0, ITEM_TEXT_MAX.author), body: c.body.slice(0, ITEM_TEXT_MAX.comment) };
}

/** A held item seen again: open, by a human (it matched when it was held), its triggering comment alone. */
export function fromHeld(h: HeldItem): ItemSeen {
  const item: ForgeItem = {
    number: h.number,
    title: h.title,
    body: h.body,
    url: h.url,
    author: h.author,
    authorIsBot: false,
    labels: h.labels,
    open: true,
    isPullRequest: h.pullRequest ?? false,
    updatedAt: '',
    ...(h.headBranch ? { headBranch: h.headBranch } : {}),
  };
  const comments = h.comment
    ? [{ ...h.comment, itemNumber: h.number, authorIsBot: false, createdAt: '', updatedAt: '' }]
    : [];
  return { item, comments };
}

/**
 * Plans the delivered items (`seen`, judged with `permissionOf`) together with those held before. A newer
 * delivery of a held item replaces it; a held item whose task now exists is dropped (planItem dedupes by the
 * item label); a held command comment was judged permitted when it was held, so its author stays permitted.
 */
export function planWithHeld(input: PlanItemsInput & { held: HeldItem[] }): HeldPlan {
  const delivered = new Set(input.seen.map((s) => s.item.number));
  const judged = input.seen.map((s) => judgeItem(input.trigger, s, input.existing, input.rules, input.permissionOf));
  const fresh = judged.map((d) => (d.kind === 'create' ? d.task : undefined));
  const granted = (): Permission | undefined => input.rules.command?.minPermission;
  const kept = input.held
    .filter((h) => !delivered.has(h.number))
    .map((h) => planItem(input.trigger, fromHeld(h), input.existing, input.rules, granted));
  const wanted = [...fresh, ...kept]
    .filter((p): p is PlannedTask => p !== undefined)
    .sort((a, b) => a.item.number - b.item.number)
    .filter((p, i, all) => i === 0 || all[i - 1]?.name !== p.name);
  const room = roomFor(input);
  const waiting = wanted.slice(room);
  return {
    create: wanted.slice(0, room),
    held: waiting.slice(0, HELD_ITEMS_MAX).map(toHeld),
    overflow: Math.max(0, waiting.length - HELD_ITEMS_MAX),
    skipped: countSkips(judged),
  };
}

/** lastError while items were dropped past the held cap (until the held backlog drains). */
export function heldOverflowError(status: Pick<AgentTriggerStatus, 'heldOverflow'>): string | undefined {
  const n = status.heldOverflow ?? 0;
  return n > 0 ? `${n} webhook item(s) held back past the cap were dropped: deliver them again` : undefined;
}

/** The held fields of status after a plan: what still waits, and the loss counted until the backlog drains. */
export function heldStatus(
  status: Pick<AgentTriggerStatus, 'heldOverflow'>,
  plan: HeldPlan,
): Pick<AgentTriggerStatus, 'heldItems' | 'heldOverflow'> {
  const waiting = plan.held.length > 0;
  return {
    heldItems: waiting ? plan.held : undefined,
    heldOverflow: waiting ? (status.heldOverflow ?? 0) + plan.overflow || undefined : undefined,
  };
}
