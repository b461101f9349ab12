// The AgentBudget rule, checked before every episode: go, wait until capacity returns (a rolling window
// or the hourly rate), or stop (a `total` budget is spent). Predictive: an episode does not start when
// what the window holds, plus the episodes running at their expected cost, plus this task's expected
// episode (see expectedEpisode) would cross the limit. Pure: the clock is input.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { WINDOW_MS } from '../api/agent-budget.ts';
import { totalTokens } from '../api/bounds.ts';
import type { BudgetWindow } from '../api/agent-budget.ts';
import type { WindowEntry } from './budget-ledger.ts';
import { normal, warning } from './actions.ts';
import type { Events } from './actions.ts';

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
  /** What the budget's other tasks spent on their finished episodes: a task with no history is expected to cost their average. */
  others?: { costUSD: number; tokens: number; episodes: number };
  /** Episodes of other tasks running now, at what each is expected to cost or what the gateway metered on it once more. */
  running?: Array<{ task: string; usd: number; tokens: number }>;
  /** The task's limits.expectedEpisodeCostUSD: its estimate until it has a history of its own. */
  declaredUSD?: number;
  /** Per other task of the ledger, the last episode whose spend it holds (spend-cap.ts episodesCounted). */
  countedThrough?: Readonly<Record<string, number>>;
}

/** What one more episode of a task is expected to cost, and where that figure comes from. */
export interface EpisodeEstimate {
  usd: number;
  tokens: number;
  source: 'own' | 'declared' | 'others' | 'none';
}

export type BudgetVerdict =
  | { kind: 'go' }
  | { kind: 'wait'; reason: 'BudgetWindow' | 'RateLimited'; until: Date; message: string; budgets: string[] }
  | { kind: 'stop'; message: string; budgets: string[] };

export const BUDGET_HOLD_REASONS: readonly string[] = ['BudgetWindow', 'RateLimited'];

const usd = (n: number) => `$${n.toFixed(2)}`;

/**
 * The next episode's expected cost: the task's own average once it has finished an episode; before that its
 * limits.expectedEpisodeCostUSD, else the average episode of the budget's other tasks, else nothing known (0).
 */
export function expectedEpisode(
  status: AgentTaskStatus,
  facts: Pick<BudgetFacts, 'others' | 'declaredUSD'>,
): EpisodeEstimate {
  const finished = status.episodes - (status.currentEpisode ? 1 : 0);
  if (finished > 0)
    return { usd: status.costUSD / finished, tokens: totalTokens(status.tokens) / finished, source: 'own' };
  const others = facts.others;
  const fromOthers =
    others && others.episodes > 0
      ? { usd: others.costUSD / others.episodes, tokens: others.tokens / others.episodes }
      : undefined;
  if (facts.declaredUSD !== undefined)
    return { usd: facts.declaredUSD, tokens: fromOthers?.tokens ?? 0, source: 'declared' };
  return fromOthers ? { ...fromOthers, source: 'others' } : { usd: 0, tokens: 0, source: 'none' };
}

const ESTIMATE_WORDS: Record<EpisodeEstimate['source'], string> = {
  own: '',
  declared: ' (its limits.expectedEpisodeCostUSD)',
  others: " (the average episode of the budget's other tasks)",
  none: '',
};

/** Would starting one more episode cross `limit`? An empty window always admits one, or a costly task could never run. */
export function blocks(used: number, next: number, limit: number | undefined): boolean {
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

/** A task held only by episodes still running is looked at again when they end, and at the latest after this. */
export const RUNNING_RECHECK_MS = 60_000;

/** One budget's answer for a task whose status already accounts for every finished episode. */
export function judgeBudget(budget: BudgetFacts, status: AgentTaskStatus, now: Date): BudgetVerdict {
  const nowMs = now.getTime();
  const windowMs = budget.window === 'total' ? undefined : nowMs + WINDOW_MS[budget.window];
  // Spend the task's status shows but the ledger has not counted yet (the episode that just ended).
  const unrecorded: WindowEntry = {
    expiresAtMs: windowMs,
    usd: Math.max(0, status.costUSD - budget.counted.costUSD),
    tokens: Math.max(0, totalTokens(status.tokens) - budget.counted.tokens),
    episodes: 0,
  };
  // Episodes running now add to the window when they end: each counts at its expected (or metered) cost.
  const running = (budget.running ?? []).map(
    (r): WindowEntry => ({ expiresAtMs: windowMs, usd: r.usd, tokens: r.tokens, episodes: 0 }),
  );
  const recorded = [...budget.spend, unrecorded];
  const spend = [...recorded, ...running];
  const next = expectedEpisode(status, budget);
  const over = (entries: WindowEntry[]) =>
    blocks(sum(entries, 'usd'), next.usd, budget.limitUSD) ||
    blocks(sum(entries, 'tokens'), next.tokens, budget.maxTokens);
  const overAfter = (removed: WindowEntry[]) => over(spend.filter((e) => !removed.includes(e)));
  const name = [budget.name];
  const what = () => spentWords(budget, recorded, running, next);
  if (over(spend) && !over(recorded)) return waitForRunning(budget, now, `${what()}; waiting for them to end`);
  // Nothing known of what an episode costs: one starts into an empty window, the next waits for what it costs.
  if (next.source === 'none' && running.length > 0)
    return waitForRunning(
      budget,
      now,
      `${running.length} episode(s) of its tasks running and no episode cost known yet; waiting for them to end`,
    );
  if (over(spend)) {
    if (budget.window === 'total')
      return { kind: 'stop', message: `AgentBudget ${budget.name}: ${what()} (total)`, budgets: name };
    const until = freesAt(spend, nowMs, (removed) => !overAfter(removed)) ?? nowMs;
    const at = new Date(until).toISOString();
    return {
      kind: 'wait',
      reason: 'BudgetWindow',
      until: new Date(until),
      message: `AgentBudget ${budget.name}: ${what()} in the ${budget.window} window; capacity returns at ${at}`,
      budgets: name,
    };
  }
  return judgeRate(budget, status, now);
}

/** "spent $0.90 (+ $0.30 expected of 1 episode running) of $1.00 and the next episode is expected to cost $0.30". */
function spentWords(
  budget: BudgetFacts,
  recorded: WindowEntry[],
  running: WindowEntry[],
  next: EpisodeEstimate,
): string {
  const spent = sum(recorded, 'usd');
  const tokens = sum(recorded, 'tokens');
  const source = ESTIMATE_WORDS[next.source];
  if (blocks(spent + sum(running, 'usd'), next.usd, budget.limitUSD)) {
    const expected =
      spent < budget.limitUSD ? ` and the next episode is expected to cost ${usd(next.usd)}${source}` : '';
    return `spent ${usd(spent)}${runningWords(running, (e) => usd(e.usd))} of ${usd(budget.limitUSD)}${expected}`;
  }
  const expected =
    tokens < (budget.maxTokens ?? 0)
      ? ` and the next episode is expected to use ${Math.round(next.tokens)}${source}`
      : '';
  return `used ${tokens}${runningWords(running, (e) => String(Math.round(e.tokens)))} of ${budget.maxTokens} tokens${expected}`;
}

function waitForRunning(budget: BudgetFacts, now: Date, what: string): BudgetVerdict {
  return {
    kind: 'wait',
    reason: 'BudgetWindow',
    until: new Date(now.getTime() + RUNNING_RECHECK_MS),
    message: `AgentBudget ${budget.name}: ${what}`,
    budgets: [budget.name],
  };
}

/** maxEpisodesPerHour: starts of the last hour, the task's own not yet in the ledger included. */
function judgeRate(budget: BudgetFacts, status: AgentTaskStatus, now: Date): BudgetVerdict {
  const nowMs = now.getTime();
  const starts = [
    ...budget.starts,
    {
      expiresAtMs: nowMs + 3_600_000,
      usd: 0,
      tokens: 0,
      episodes: Math.max(0, status.episodes - budget.counted.episodes),
    },
  ];
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
      budgets: [budget.name],
    };
  }
  return { kind: 'go' };
}

/** " (+ $0.30 expected of 1 episode running)", or nothing when no other episode is running. */
function runningWords(running: WindowEntry[], amount: (e: WindowEntry) => string): string {
  if (running.length === 0) return '';
  const total: WindowEntry = { usd: sum(running, 'usd'), tokens: sum(running, 'tokens'), episodes: 0 };
  return ` (+ ${amount(total)} expected of ${running.length} episode${running.length === 1 ? '' : 's'} running)`;
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
