// An episode's agent ops for `episodic get NAME --episodes` (issue 28): the OPS column (how many it gave and
// how many of them were refused), and under the table why each refused one was (agent text made printable).
import type { EpisodeRecord } from '../api/episode-record.ts';
import { printable } from '../util/printable.ts';

type OpsOfRecord = Pick<EpisodeRecord, 'number' | 'ops' | 'opsRejected'>;

export function hasOps(records: readonly OpsOfRecord[]): boolean {
  return records.some((r) => (r.ops?.length ?? 0) > 0 || r.opsRejected !== undefined);
}

/** "3" for three ops given and applied; "3, 1 rejected" when one was refused while applying. */
export function opsCell(r: OpsOfRecord): string {
  const given = r.ops?.length ?? 0;
  const refused = r.ops?.filter((w) => w.endsWith(' (rejected)')).length ?? 0;
  if (given === 0 && r.opsRejected === undefined) return '';
  return refused > 0 ? `${given}, ${refused} rejected` : `${given}`;
}

/** One line per episode with rejected ops (at parse time or while applying): which and why. */
export function opsRejectedLines(records: readonly OpsOfRecord[]): string[] {
  return records
    .filter((r) => r.opsRejected !== undefined)
    .map((r) => `episode ${r.number}: ops rejected: ${printable(r.opsRejected ?? '')}`);
}
