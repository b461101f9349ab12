// A forge poll's cursor: the since= of the next poll and the items handled at exactly it. since= is inclusive
// to the second, so what was handled at the cursor (by fingerprint) is not looked at again; the cursor moves
// only once everything a poll saw was handled (an item held for maxConcurrency is polled again).
import type { AgentTriggerStatus } from '../api/agent-trigger.ts';
import type { ForgeItem } from '../api/forge-item.ts';
import type { ItemSeen } from './trigger-items.ts';

/** At most this many fingerprints at the cursor are kept (a burst within one second beyond it is seen again). */
export const CURSOR_ITEMS_MAX = 200;

export interface PolledItem {
  item: ForgeItem;
  /** Number, state, comment count and labels: a change within updated_at's one second still shows. */
  fingerprint: string;
}

/** What a poll saw: the items changed since the cursor (oldest update first), or nothing (GitHub's 304). */
export type Poll = { kind: 'unchanged' } | { kind: 'listed'; polled: PolledItem[]; seen: ItemSeen[] };

/** The cursor after a poll whose items were all handled: the newest updatedAt, and what was seen at it. */
export function advancedCursor(
  status: Pick<AgentTriggerStatus, 'cursor' | 'cursorItems'>,
  polled: PolledItem[],
): Pick<AgentTriggerStatus, 'cursor' | 'cursorItems'> {
  const newest = polled.at(-1)?.item.updatedAt;
  if (!newest) return { cursor: status.cursor, cursorItems: status.cursorItems };
  const sameSecond = polled.filter((p) => p.item.updatedAt === newest).map((p) => p.fingerprint);
  const before = newest === status.cursor ? (status.cursorItems ?? []) : [];
  return { cursor: newest, cursorItems: [...before, ...sameSecond].slice(-CURSOR_ITEMS_MAX) };
}

/** What a poll listed, less what was handled at exactly the cursor, oldest update first. */
export function newSinceCursor(
  status: Pick<AgentTriggerStatus, 'cursor' | 'cursorItems'>,
  listed: PolledItem[],
): PolledItem[] {
  const atCursor = new Set(status.cursorItems ?? []);
  return listed
    .filter((p) => !(p.item.updatedAt === status.cursor && atCursor.has(p.fingerprint)))
    .sort((a, b) => a.item.updatedAt.localeCompare(b.item.updatedAt));
}
