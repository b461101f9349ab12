// Spend caps at two moments: before an episode starts (capReached in reconcile.ts: the task's maxCostUSD and
// maxTokens), and while one runs, request by request at the gateway (issue 29): the same task cap on the spend
// so far plus what the gateway metered, and what the family caps and AgentBudget windows had left when the
// episode started, less what their other episodes were metered at since, plus what left a rolling window since.
// Pure: the gateway carries out the verdict, the loop gathered the facts; the clock is an argument.
import { episodeNumbersUsed } from '../api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { WINDOW_MS } from '../api/agent-budget.ts';
import { roundUSD, totalTokens } from '../api/bounds.ts';
import { blocks } from './budget.ts';
import type { BudgetFacts } from './budget.ts';
import type { WindowEntry } from './budget-ledger.ts';
import type { FamilyCap } from './family-cap.ts';
import type { EpisodeLeash, Frees, LeftOver } from '../api/episode-leash.ts';

export type { EpisodeLeash, LeftOver };

type Limits = Pick<AgentTaskSpec['limits'], 'maxCostUSD' | 'maxTokens'>;

/** The task's own cap, given what it spent (USD, input + output tokens): reached, and how, or undefined. */
export function spendCapReached(spent: { costUSD: number; tokens: number }, limits: Limits): string | undefined {
  if (limits.maxCostUSD !== undefined && spent.costUSD >= limits.maxCostUSD)
    return `spent $${spent.costUSD.toFixed(4)} of maxCostUSD $${limits.maxCostUSD}`;
  if (limits.maxTokens !== undefined && spent.tokens >= limits.maxTokens)
    return `used ${spent.tokens} of maxTokens ${limits.maxTokens}`;
  return undefined;
}

export type RequestVerdict = { kind: 'go' } | { kind: 'refuse'; message: string };

const sum = (entries: readonly WindowEntry[], field: 'usd' | 'tokens') => entries.reduce((s, e) => s + e[field], 0);

/** The leash of the episode about to start, from the facts the pass that starts it had (at `now`). */
export function episodeLeash(
  status: AgentTaskStatus,
  limits: Limits,
  budgets: readonly BudgetFacts[] = [],
  caps: readonly FamilyCap[] = [],
  now?: Date,
): EpisodeLeash {
  const others: LeftOver[] = [];
  for (const b of budgets) {
    // The window's spend, and what the task's status shows that the ledger has not counted yet (it enters now).
    const unrecorded: WindowEntry = {
      expiresAtMs: b.window === 'total' || !now ? undefined : now.getTime() + WINDOW_MS[b.window],
      usd: Math.max(0, status.costUSD - b.counted.costUSD),
      tokens: Math.max(0, totalTokens(status.tokens) - b.counted.tokens),
      episodes: 0,
    };
    const spend = [...b.spend, unrecorded];
    const usd = sum(spend, 'usd');
    const tokens = sum(spend, 'tokens');
    // Its other tasks spend from it while this episode runs: the gateway counts their metered spend too.
    const frees = windowFrees(spend);
    others.push({
      what: `AgentBudget ${b.name}`,
      usd: roundUSD(b.limitUSD - usd),
      tokens: b.maxTokens === undefined ? undefined : b.maxTokens - tokens,
      shared: { key: `budget ${b.name}`, counted: b.countedThrough ?? {} },
      ...(frees.length > 0 ? { frees } : {}),
    });
  }
  for (const c of caps) {
    const whose = c.own
      ? `maxCostUSD ${c.maxCostUSD} (the task and its children)`
      : `maxCostUSD ${c.maxCostUSD} of ${c.task} (its family's cap)`;
    const usd = roundUSD(c.maxCostUSD - c.othersUSD - status.costUSD);
    // Its other members spend from it while this episode runs: the gateway counts their metered spend too.
    const shared = c.countedThrough && { key: `family ${c.task}`, counted: c.countedThrough };
    others.push(shared ? { what: whose, usd, shared } : { what: whose, usd });
  }
  return {
    task: {
      costUSD: status.costUSD,
      tokens: totalTokens(status.tokens),
      maxCostUSD: limits.maxCostUSD,
      maxTokens: limits.maxTokens,
    },
    others,
  };
}

/** One live episode's meter at the gateway, as the shared caps count it. */
export interface LiveSpend {
  task: string;
  episode: number;
  costUSD: number;
  tokens: number;
}

/** What the other members of a shared cap spent that its snapshot did not count: episodes after `counted`. */
export function sharedSpend(
  shared: LeftOver['shared'],
  self: string,
  live: Iterable<LiveSpend>,
): { costUSD: number; tokens: number } {
  const extra = { costUSD: 0, tokens: 0 };
  if (!shared) return extra;
  for (const l of live) {
    if (l.task === self || l.episode <= (shared.counted[l.task] ?? 0)) continue;
    extra.costUSD += l.costUSD;
    extra.tokens += l.tokens;
  }
  return { costUSD: roundUSD(extra.costUSD), tokens: extra.tokens };
}

/** The window's slots that leave it at a known time, earliest first: the room a rolling window gives back. */
function windowFrees(spend: readonly WindowEntry[]): Frees[] {
  return spend
    .flatMap((e) =>
      e.expiresAtMs !== undefined && (e.usd > 0 || e.tokens > 0)
        ? [{ atMs: e.expiresAtMs, usd: e.usd, tokens: e.tokens }]
        : [],
    )
    .sort((a, b) => a.atMs - b.atMs);
}

/** What of `frees` has left its window by `now`. */
export function freedBy(frees: readonly Frees[] | undefined, now: Date | undefined): { usd: number; tokens: number } {
  const freed = { usd: 0, tokens: 0 };
  if (!now) return freed;
  for (const f of frees ?? []) {
    if (f.atMs > now.getTime()) continue;
    freed.usd += f.usd;
    freed.tokens += f.tokens;
  }
  return { usd: roundUSD(freed.usd), tokens: freed.tokens };
}

/**
 * The last episode of a task whose spend its status (and so a ledger or a family's sum taken from it) holds:
 * a running episode's is not in it yet. A shared cap's snapshot records this per other task (LeftOver.shared).
 */
export function episodesCounted(status: AgentTaskStatus): number {
  return status.currentEpisode ? status.currentEpisode.number - 1 : episodeNumbersUsed(status);
}

/**
 * Before a request is forwarded: is anything left, given what the episode's requests so far were metered at
 * and, per `others` entry, what the cap's other episodes were metered at since its snapshot (sharedSpend)
 * and, at `now`, what left its rolling window since (the clock is the gateway's; without it nothing left).
 */
export function judgeRequest(
  leash: EpisodeLeash,
  metered: { costUSD: number; tokens: number },
  shared: ReadonlyArray<{ costUSD: number; tokens: number } | undefined> = [],
  now?: Date,
): RequestVerdict {
  const spent = { costUSD: roundUSD(leash.task.costUSD + metered.costUSD), tokens: leash.task.tokens + metered.tokens };
  const own = spendCapReached(spent, leash.task);
  if (own) return { kind: 'refuse', message: `episodic: budget exhausted: ${own} (the task's limits)` };
  for (const [i, o] of leash.others.entries()) {
    const extra = shared[i] ?? { costUSD: 0, tokens: 0 };
    const freed = freedBy(o.frees, now);
    const usd = roundUSD(metered.costUSD + extra.costUSD);
    const by = extra.costUSD > 0 || extra.tokens > 0 ? ' (with what its other episodes spent since)' : '';
    const left = (start: number, back: number) => Math.max(0, start + back);
    if (blocks(usd, 0, o.usd === undefined ? undefined : left(o.usd, freed.usd))) {
      const back = freed.usd > 0 ? ` (+ $${freed.usd.toFixed(4)} that has left its window since)` : '';
      return {
        kind: 'refuse',
        message: `episodic: budget exhausted: ${o.what}: $${Math.max(0, o.usd ?? 0).toFixed(4)} was left when the episode started${back} and it spent $${usd.toFixed(4)}${by}`,
      };
    }
    const tokens = metered.tokens + extra.tokens;
    if (blocks(tokens, 0, o.tokens === undefined ? undefined : left(o.tokens, freed.tokens))) {
      const back = freed.tokens > 0 ? ` (+ ${freed.tokens} that have left its window since)` : '';
      return {
        kind: 'refuse',
        message: `episodic: budget exhausted: ${o.what}: ${Math.max(0, o.tokens ?? 0)} tokens were left when the episode started${back} and it used ${tokens}${by}`,
      };
    }
  }
  return { kind: 'go' };
}
