// A task's family for its page: the task that spawned it, and what it spawned, as a tree (children of
// children), from the fleet's rows. Bounded: a page never lists more than FAMILY_MAX tasks.
import type { Family, FamilyNode, TaskRow } from './views.ts';

export const FAMILY_MAX = 200;

export function familyOf(rows: Iterable<TaskRow>, key: string): Family {
  const byParent = new Map<string, TaskRow[]>();
  const byKey = new Map<string, TaskRow>();
  for (const row of rows) {
    byKey.set(row.key, row);
    if (!row.parent) continue;
    const siblings = byParent.get(row.parent);
    if (siblings) siblings.push(row);
    else byParent.set(row.parent, [row]);
  }
  let listed = 0;
  let more = 0;
  const seen = new Set<string>([key]);
  const grow = (of: string): FamilyNode[] =>
    (byParent.get(of) ?? [])
      .sort((a, b) => a.key.localeCompare(b.key))
      .flatMap((row) => {
        if (seen.has(row.key)) return [];
        seen.add(row.key);
        if (listed >= FAMILY_MAX) {
          more++;
          return [];
        }
        listed++;
        return [{ row, children: grow(row.key) }];
      });
  const self = byKey.get(key);
  const parent = self?.parent ? byKey.get(self.parent) : undefined;
  return { parent, children: grow(key), more };
}
