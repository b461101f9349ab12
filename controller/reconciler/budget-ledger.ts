// A budget's ledger: spend in slots of time, kept bounded and pure (the clock is an argument), so window
// spend survives a restart and "when does capacity return" is a sum over slots.
import { WINDOW_MS } from '../api/agent-budget.ts';
import type { BudgetLedger, BudgetWindow, LedgerBucket } from '../api/agent-budget.ts';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
/** Slot length per window: at most ~170 slots whatever the window (7d by the hour). */
export const SLOT_MS: Record<BudgetWindow, number> = {
  '1h': MINUTE_MS,
  '5h': 5 * MINUTE_MS,
  '24h': 15 * MINUTE_MS,
  '7d': HOUR_MS,
  total: Infinity,
};
/** Tasks whose counted spend a ledger remembers; past it the least recently seen is dropped (its next pass starts a new baseline). */
export const MAX_LEDGER_TASKS = 500;

export interface Spend {
  usd: number;
  tokens: number;
  episodes: number;
}

/** A slot of spend and when it leaves the window (undefined: never, a `total` budget). */
export interface WindowEntry {
  expiresAtMs?: number;
  usd: number;
  tokens: number;
  episodes: number;
}

function expiry(bucket: LedgerBucket, windowMs: number): number | undefined {
  return Number.isFinite(windowMs) ? Date.parse(bucket.last) + windowMs : undefined;
}

/** Adds spend at `now` to its slot and drops slots that have left the window; episode starts also go by the minute. */
export function addSpend(ledger: BudgetLedger, window: BudgetWindow, spend: Spend, now: Date): BudgetLedger {
  const nowMs = now.getTime();
  const iso = now.toISOString();
  const add = (buckets: LedgerBucket[], slotMs: number, part: Spend): LedgerBucket[] => {
    const start = Number.isFinite(slotMs)
      ? new Date(Math.floor(nowMs / slotMs) * slotMs).toISOString()
      : (buckets[0]?.start ?? iso);
    const out = buckets.map((b) => ({ ...b }));
    let slot = out.find((b) => b.start === start);
    if (!slot) out.push((slot = { start, last: iso, usd: 0, tokens: 0, episodes: 0 }));
    slot.last = iso;
    slot.usd += part.usd;
    slot.tokens += part.tokens;
    slot.episodes += part.episodes;
    return out;
  };
  let buckets = ledger.buckets;
  if (spend.usd > 0 || spend.tokens > 0) buckets = add(buckets, SLOT_MS[window], { ...spend, episodes: 0 });
  let starts = ledger.starts;
  if (spend.episodes > 0) starts = add(starts, MINUTE_MS, { usd: 0, tokens: 0, episodes: spend.episodes });
  return prune({ ...ledger, buckets, starts }, window, now);
}

/** Without the slots that have left the window (and starts older than an hour). */
export function prune(ledger: BudgetLedger, window: BudgetWindow, now: Date): BudgetLedger {
  const nowMs = now.getTime();
  const live = (windowMs: number) => (b: LedgerBucket) => (expiry(b, windowMs) ?? Infinity) > nowMs;
  let buckets = ledger.buckets.filter(live(WINDOW_MS[window]));
  // A window changed to `total` keeps what it had; one changed to a rolling window keeps it as one slot.
  if (window === 'total' && buckets.length > 1) {
    buckets = [
      buckets.reduce((a, b) => ({
        start: a.start,
        last: b.last > a.last ? b.last : a.last, // ISO strings: later sorts greater
        usd: a.usd + b.usd,
        tokens: a.tokens + b.tokens,
        episodes: a.episodes + b.episodes,
      })),
    ];
  }
  return { ...ledger, buckets, starts: ledger.starts.filter(live(HOUR_MS)) };
}

/** The ledger's spend as entries that each leave the window at their own time; starts of the last hour likewise. */
export function windowEntries(
  ledger: BudgetLedger,
  window: BudgetWindow,
): { spend: WindowEntry[]; starts: WindowEntry[] } {
  const entry =
    (windowMs: number) =>
    (b: LedgerBucket): WindowEntry => ({
      expiresAtMs: expiry(b, windowMs),
      usd: b.usd,
      tokens: b.tokens,
      episodes: b.episodes,
    });
  return { spend: ledger.buckets.map(entry(WINDOW_MS[window])), starts: ledger.starts.map(entry(HOUR_MS)) };
}

/** Sets what the ledger has counted of a task, most recently seen last, bounded. */
export function setCounted(
  ledger: BudgetLedger,
  task: string,
  counted: { costUSD: number; tokens: number; episodes: number },
): BudgetLedger {
  const tasks = ledger.tasks.filter((t) => t.task !== task);
  tasks.push({ task, ...counted });
  return { ...ledger, tasks: tasks.slice(-MAX_LEDGER_TASKS) };
}
