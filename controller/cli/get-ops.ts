// An episode's agent ops for `episodic get NAME --episodes` (issue 28): the OPS column (how many it gave and
// how many of them were refused), and under the table why each refused one was (agent text made printable).
import type { EpisodeRecord } from '../api/episode-record.ts';
import { printable } from '../util/printable.ts';

type OpsOfRecord = Pick<EpisodeRecord, 'number' | 'opsRejected'>;

const REJECTED_MARK = ' (rejected)'; // reconciler/ops.ts withApplyRejections marks an op refused while applying

/**
 * OPS: "3 applied", "1 applied, 2 rejected". Refused while applying: the ops marked so; refused when read
 * (no op to mark): one per "; " of opsRejected.
 */
export function opsCell(record: Pick<EpisodeRecord, 'ops' | 'opsRejected'>): string {
  const ops = record.ops ?? [];
  const marked = ops.filter((w) => w.endsWith(REJECTED_MARK)).length;
  const applied = ops.length - marked;
  const rejected = marked > 0 ? marked : record.opsRejected ? record.opsRejected.split('; ').length : 0;
  if (applied === 0 && rejected === 0) return '';
  return rejected === 0 ? `${applied} applied` : `${applied} applied, ${rejected} rejected`;
}

/** One line per episode with rejected ops (at parse time or while applying): which and why. */
export function opsRejectedLines(records: readonly OpsOfRecord[]): string[] {
  return records
    .filter((r) => r.opsRejected !== undefined)
    .map((r) => `episode ${r.number}: ops rejected: ${printable(r.opsRejected ?? '')}`);
}
