// Spend caps at two moments: before an episode starts (capReached in reconcile.ts: the task's maxCostUSD and
// maxTokens), and while one runs, request by request at the gateway (issue 29): the same task cap on the spend
// so far plus what the gateway metered, and what the family caps and AgentBudgets had left when the episode
// started. Pure: the gateway carries out the verdict, the loop gathered the facts.
import type { AgentTaskSpec, AgentTaskStatus } from '../api/agent-task.ts';
import { roundUSD, totalTokens } from '../api/bounds.ts';
import { blocks } from './budget.ts';
import type { BudgetFacts } from './budget.ts';
import type { WindowEntry } from './budget-ledger.ts';
import type { FamilyCap } from './family-cap.ts';
import type { EpisodeLeash, LeftOver } from '../api/episode-leash.ts';

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

/** The leash of the episode about to start, from the facts the pass that starts it had. */
export function episodeLeash(
  status: AgentTaskStatus,
  limits: Limits,
  budgets: readonly BudgetFacts[] = [],
  caps: readonly FamilyCap[] = [],
): EpisodeLeash {
  const others: LeftOver[] = [];
  for (const b of budgets) {
    // The window's spend, and what the task's status shows that the ledger has not counted yet.
    const usd = sum(b.spend, 'usd') + Math.max(0, status.costUSD - b.counted.costUSD);
    const tokens = sum(b.spend, 'tokens') + Math.max(0, totalTokens(status.tokens) - b.counted.tokens);
    others.push({
      what: `AgentBudget ${b.name}`,
      usd: roundUSD(b.limitUSD - usd),
      tokens: b.maxTokens === undefined ? undefined : b.maxTokens - tokens,
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

/**
 * Before a request is forwarded: is anything left, given what the episode's requests so far were metered at
 * and, per `others` entry, what the cap's other live episodes spent since its snapshot (sharedSpend)?
 */
export function judgeRequest(
  leash: EpisodeLeash,
  metered: { costUSD: number; tokens: number },
  shared: ReadonlyArray<{ costUSD: number; tokens: number } | undefined> = [],
): RequestVerdict {
  const spent = { costUSD: roundUSD(leash.task.costUSD + metered.costUSD), tokens: leash.task.tokens + metered.tokens };
  const own = spendCapReached(spent, leash.task);
  if (own) return { kind: 'refuse', message: `episodic: budget exhausted: ${own} (the task's limits)` };
  for (const [i, o] of leash.others.entries()) {
    const extra = shared[i] ?? { costUSD: 0, tokens: 0 };
    const usd = roundUSD(metered.costUSD + extra.costUSD);
    const by = extra.costUSD > 0 || extra.tokens > 0 ? ' (with what its other members spent since)' : '';
    if (blocks(usd, 0, o.usd === undefined ? undefined : Math.max(0, o.usd)))
      return {
        kind: 'refuse',
        message: `episodic: budget exhausted: ${o.what}: $${Math.max(0, o.usd ?? 0).toFixed(4)} was left when the episode started and it spent $${usd.toFixed(4)}${by}`,
      };
    const tokens = metered.tokens + extra.tokens;
    if (blocks(tokens, 0, o.tokens === undefined ? undefined : Math.max(0, o.tokens)))
      return {
        kind: 'refuse',
        message: `episodic: budget exhausted: ${o.what}: ${Math.max(0, o.tokens ?? 0)} tokens were left when the episode started and it used ${tokens}${by}`,
      };
  }
  return { kind: 'go' };
}
