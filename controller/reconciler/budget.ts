// The AgentBudget rule, checked before every episode: go, wait until capacity returns (a rolling window
// or the hourly rate), or stop (a `total` budget is spent). Predictive: an episode does not start when
// what the window holds plus this task's average episode would cross the limit. Pure: the clock is input.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { WINDOW_MS } from '../api/agent-budget.ts';
import type { BudgetWindow } from '../api/agent-budget.ts';
import type { WindowEntry } from './budget-ledger.ts';
import { normal, warning } from './types.ts';
import type { Events } from './types.ts';

/** One AgentBudget that selects the task, as the loop sees it before the pass. */
export interface BudgetFacts {
  name: string;
  window: BudgetWindow;
  limitUSD: number;
  maxTokens?: number;
  maxEpisodesPerHour?: number;
  /** The window's recorded spend, slot by slot. */
  spend: WindowEntry[];
  /** Episode starts of the last hour, slot by slot. */
  starts: WindowEntry[];
  /** What the ledger has counted of this task: anything its status shows beyond that is spend not yet recorded. */
  counted: { costUSD: number; tokens: number; episodes: number };
}

export type BudgetVerdict =
  | { kind: 'go' }
  | { kind: 'wait'; reason: 'BudgetWindow' | 'RateLimited'; until: Date; message: string; budgets: string[] }
  | { kind: 'stop'; message: string; budgets: string[] };

export const BUDGET_HOLD_REASONS: readonly string[] = ['BudgetWindow', 'RateLimited'];

const usd = (n: number) => `$${n.toFixed(2)}`;
const tokensOf = (status: AgentTaskStatus) => status.tokens.input + status.tokens.output;

/** The task's average episode so far: what the next one is expected to cost. */
export function averageEpisode(status: AgentTaskStatus): { usd: number; tokens: number } {
  const n = status.episodes;
  return n > 0 ? { usd: status.costUSD / n, tokens: tokensOf(status) / n } : { usd: 0, tokens: 0 };
}

/** Would starting one more episode cross `limit`? An empty window always admits one, or a costly task could never run. */
function blocks(used: number, next: number, limit: number | undefined): boolean {
  if (limit === undefined) return false;
  return used >= limit || (used > 0 && used + next > limit);
}

/** The earliest instant at which dropping expired entries makes `ok` true; undefined if never (a total budget). */
function freesAt(entries: WindowEntry[], now: number, ok: (removed: WindowEntry[]) => boolean): number | undefined {
  const expiring = entries
    .filter((e) => e.expiresAtMs !== undefined)
    .sort((a, b) => (a.expiresAtMs as number) - (b.expiresAtMs as number));
  const removed: WindowEntry[] = [];
  for (const e of expiring) {
    removed.push(e);
    if (ok(removed)) return Math.max(now, e.expiresAtMs as number);
  }
  return undefined;
}

const sum = (entries: WindowEntry[], field: 'usd' | 'tokens' | 'episodes') => entries.reduce((s, e) => s + e[field], 0);

/** One budget's answer for a task whose status already accounts for every finished episode. */
export function judgeBudget(budget: BudgetFacts, status: AgentTaskStatus, now: Date): BudgetVerdict {
  const nowMs = now.getTime();
  const windowMs = budget.window === 'total' ? undefined : nowMs + WINDOW_MS[budget.window];
  // Spend the task's status shows but the ledger has not counted yet (the episode that just ended).
  const unrecorded: WindowEntry = {
    expiresAtMs: windowMs,
    usd: Math.max(0, status.costUSD - budget.counted.costUSD),
    tokens: Math.max(0, tokensOf(status) - budget.counted.tokens),
    episodes: 0,
  };
  const spend = [...budget.spend, unrecorded];
  const starts = [
    ...budget.starts,
    {
      expiresAtMs: nowMs + 3_600_000,
      usd: 0,
      tokens: 0,
      episodes: Math.max(0, status.episodes - budget.counted.episodes),
    },
  ];
  const next = averageEpisode(status);
  const overAfter = (removed: WindowEntry[]) => {
    const u = sum(spend, 'usd') - sum(removed, 'usd');
    const t = sum(spend, 'tokens') - sum(removed, 'tokens');
    return blocks(u, next.usd, budget.limitUSD) || blocks(t, next.tokens, budget.maxTokens);
  };
  const name = [budget.name];
  if (overAfter([])) {
    const spent = sum(spend, 'usd');
    const tokens = sum(spend, 'tokens');
    const what = blocks(spent, next.usd, budget.limitUSD)
      ? `spent ${usd(spent)} of ${usd(budget.limitUSD)}${spent < budget.limitUSD ? ` and the next episode is expected to cost ${usd(next.usd)}` : ''}`
      : `used ${tokens} of ${budget.maxTokens} tokens${tokens < (budget.maxTokens ?? 0) ? ` and the next episode is expected to use ${Math.round(next.tokens)}` : ''}`;
    if (budget.window === 'total')
      return { kind: 'stop', message: `AgentBudget ${budget.name}: ${what} (total)`, budgets: name };
    const until = freesAt(spend, nowMs, (removed) => !overAfter(removed)) ?? nowMs;
    const at = new Date(until).toISOString();
    return {
      kind: 'wait',
      reason: 'BudgetWindow',
      until: new Date(until),
      message: `AgentBudget ${budget.name}: ${what} in the ${budget.window} window; capacity returns at ${at}`,
      budgets: name,
    };
  }
  const max = budget.maxEpisodesPerHour;
  const started = sum(starts, 'episodes');
  if (max !== undefined && started >= max) {
    const until = freesAt(starts, nowMs, (removed) => started - sum(removed, 'episodes') < max) ?? nowMs;
    const at = new Date(until).toISOString();
    return {
      kind: 'wait',
      reason: 'RateLimited',
      until: new Date(until),
      message: `AgentBudget ${budget.name}: ${started} episodes started in the last hour (maxEpisodesPerHour ${max}); next at ${at}`,
      budgets: name,
    };
  }
  return { kind: 'go' };
}

/** Every budget of the task: any spent `total` stops it; otherwise it waits for the last of the budgets that hold it. */
export function judgeBudgets(budgets: readonly BudgetFacts[], status: AgentTaskStatus, now: Date): BudgetVerdict {
  const verdicts = budgets.map((b) => judgeBudget(b, status, now));
  const stops = verdicts.filter((v) => v.kind === 'stop');
  if (stops.length > 0)
    return { kind: 'stop', message: stops.map((s) => s.message).join('; '), budgets: stops.flatMap((s) => s.budgets) };
  const waits = verdicts.filter((v) => v.kind === 'wait');
  if (waits.length === 0) return { kind: 'go' };
  const last = waits.reduce((a, b) => (b.until > a.until ? b : a));
  const reason = waits.some((w) => w.reason === 'BudgetWindow') ? 'BudgetWindow' : 'RateLimited';
  return {
    kind: 'wait',
    reason,
    until: last.until,
    message: waits.map((w) => w.message).join('; '),
    budgets: waits.flatMap((w) => w.budgets),
  };
}

/** The status of a task a budget keeps from starting (not for `go`): Waiting until capacity returns, or NeedsReview. */
export function budgetHold(
  status: AgentTaskStatus,
  verdict: Exclude<BudgetVerdict, { kind: 'go' }>,
  now: Date,
): { status: AgentTaskStatus; actions: []; events: Events; requeueAfterMs?: number; heldByBudgets: string[] } {
  if (verdict.kind === 'stop') {
    return {
      status: {
        ...status,
        phase: 'NeedsReview',
        reason: 'BudgetExceeded',
        message: verdict.message,
        nextEpisodeAt: undefined,
      },
      actions: [],
      events: [warning('BudgetExceeded', verdict.message)],
      heldByBudgets: verdict.budgets,
    };
  }
  const next = {
    ...status,
    phase: 'Waiting' as const,
    reason: verdict.reason,
    message: verdict.message,
    nextEpisodeAt: verdict.until.toISOString(),
  };
  return {
    status: next,
    actions: [],
    events: status.reason !== verdict.reason ? [normal('BudgetHeld', verdict.message)] : [],
    requeueAfterMs: Math.max(0, verdict.until.getTime() - now.getTime()),
    heldByBudgets: verdict.budgets,
  };
}

/**
 * Whether `budget` holds the task after a pass: it kept the task from starting, or a total budget stopped
 * it and the task stays stopped (NeedsReview/BudgetExceeded is terminal: later passes decide nothing).
 */
export function budgetHoldsTask(
  budget: string,
  heldBy: readonly string[] | undefined,
  status: AgentTaskStatus,
  heldBefore: boolean,
): boolean {
  const stopped = status.phase === 'NeedsReview' && status.reason === 'BudgetExceeded' && heldBefore;
  return (heldBy?.includes(budget) ?? false) || stopped;
}
