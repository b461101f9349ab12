// status.progress: the plan file's counts after the last episode, with the "done/total" string the
// Progress printer column shows (JSONPath cannot put two fields together).
import type { ChecklistCounts, ProgressStatus } from '../api/leash.ts';

export function progressStatus(counts: ChecklistCounts): ProgressStatus {
  // Skipped items are settled, as for completion: a finished plan reads 12/12.
  return { ...counts, summary: `${counts.done + counts.skipped}/${counts.total}` };
}
