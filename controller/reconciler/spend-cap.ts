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
    others.push({ what: whose, usd: roundUSD(c.maxCostUSD - c.othersUSD - status.costUSD) });
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

/** Before a request is forwarded: is anything left, given what the episode's requests so far were metered at? */
export function judgeRequest(leash: EpisodeLeash, metered: { costUSD: number; tokens: number }): RequestVerdict {
  const spent = { costUSD: roundUSD(leash.task.costUSD + metered.costUSD), tokens: leash.task.tokens + metered.tokens };
  const own = spendCapReached(spent, leash.task);
  if (own) return { kind: 'refuse', message: `episodic: budget exhausted: ${own} (the task's limits)` };
  for (const o of leash.others) {
    if (blocks(metered.costUSD, 0, o.usd === undefined ? undefined : Math.max(0, o.usd)))
      return {
        kind: 'refuse',
        message: `episodic: budget exhausted: ${o.what}: $${Math.max(0, o.usd ?? 0).toFixed(4)} was left when the episode started and it spent $${metered.costUSD.toFixed(4)}`,
      };
    if (blocks(metered.tokens, 0, o.tokens === undefined ? undefined : Math.max(0, o.tokens)))
      return {
        kind: 'refuse',
        message: `episodic: budget exhausted: ${o.what}: ${Math.max(0, o.tokens ?? 0)} tokens were left when the episode started and it used ${metered.tokens}`,
      };
  }
  return { kind: 'go' };
}
