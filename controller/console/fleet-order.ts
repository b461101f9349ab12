// The Fleet's default order (what needs a person first, then what is moving, then what is done; ties by name)
// and its first page: one rule for the page (web/fleet-columns.ts) and the server (/api/tasks?first=N), so the
// first page the server sends is exactly the page the browser would draw from the whole list.
import type { TaskRow } from './views.ts';

const RANK: Record<string, number> = {
  NeedsReview: 0,
  Failed: 1,
  Running: 3,
  Waiting: 4,
  Pending: 5,
  Suspended: 6,
  Succeeded: 7,
  Skipped: 8,
};

/** Rows on a page of the fleet table: the page asks for this many first (/api/tasks?first=PAGE_ROWS). */
export const PAGE_ROWS = 100;
/** The most rows /api/tasks?first=N sends; more than this is asked for whole. */
export const FIRST_MAX = 1000;
/** The first page's address, preloaded by the HTML and fetched by the page (the same URL, so one request). */
export const FIRST_PAGE_PATH = `/api/tasks?first=${PAGE_ROWS}`;

export function phaseRank(phase: string): number {
  return RANK[phase] ?? 9;
}

/** A half-open breaker needs a look before what is merely moving. */
export function rank(row: Pick<TaskRow, 'phase' | 'breaker'>): number {
  if (row.breaker === 'HalfOpen' && phaseRank(row.phase) > 2) return 2;
  return phaseRank(row.phase);
}

// Plain comparison, not localeCompare: sorting 10,000 rows each render must stay a few milliseconds.
export function order(x: string | number, y: string | number): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

export function defaultOrder(a: TaskRow, b: TaskRow): number {
  return rank(a) - rank(b) || order(a.key, b.key);
}

/** What the fleet's header shows of all rows: the count, the spend and the count per phase. */
export interface FleetSummary {
  total: number;
  spendUSD: number;
  phases: Record<string, number>;
}

export function summaryOf(rows: readonly TaskRow[]): FleetSummary {
  const phases: Record<string, number> = {};
  let spendUSD = 0;
  for (const r of rows) {
    phases[r.phase] = (phases[r.phase] ?? 0) + 1;
    spendUSD += r.costUSD;
  }
  return { total: rows.length, spendUSD, phases };
}

/** The first `n` rows in the default order (n cut to 0..FIRST_MAX) and the summary of all of them. */
export function firstPage(rows: readonly TaskRow[], n: number): { items: TaskRow[]; summary: FleetSummary } {
  const count = Math.max(0, Math.min(FIRST_MAX, Math.floor(n)));
  return { items: [...rows].sort(defaultOrder).slice(0, count), summary: summaryOf(rows) };
}

/** `?first=N` read strictly: digits only, else undefined (the whole list). */
export function parseFirst(value: string | null): number | undefined {
  return value !== null && /^\d{1,6}$/.test(value) ? Number(value) : undefined;
}
