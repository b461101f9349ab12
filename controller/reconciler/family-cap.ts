// A family's cost cap (issue 28): a task spawned under an ancestor with limits.maxCostUSD starts no episode whose
// expected cost would take the ancestor's family (it and every task below it) past that cap: the predictive rule
// of AgentBudgets (budget.ts blocks) over the family's spend, with other members' running episodes at their
// expected cost. Every member judges the family's next episode at no less than the family's average episode, so
// the family stops as one instead of each member running to its own cap. Pure: the loop gathers FamilyCap.
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { roundUSD } from '../api/bounds.ts';
import { blocks, expectedEpisode } from './budget.ts';

/** Finished episodes and what they cost. */
export interface FamilySpend {
  costUSD: number;
  episodes: number;
}

/** One capped ancestor of a task (or the task itself, capping its children), as the loop sees it before the pass. */
export interface FamilyCap {
  /** The task whose maxCostUSD this is. */
  task: string;
  /** The cap is the task's own: its children and theirs count toward it. */
  own: boolean;
  maxCostUSD: number;
  /** What the family spent, this task's own spend left out (its status has the newest figure). */
  othersUSD: number;
  /** The family's other members with an episode running now: each counts at its expected cost (familyEstimate). */
  running: ReadonlyArray<RunningMember>;
  /** The finished episodes of the family's other members. */
  finished: FamilySpend;
  /** Per other member (task name), the last episode whose spend is in othersUSD (spend-cap.ts shared). */
  countedThrough?: Readonly<Record<string, number>>;
}

/** A member with an episode running, as its status was on record. */
export interface RunningMember {
  task: string;
  status: AgentTaskStatus;
  declaredUSD?: number;
}

export type FamilyVerdict = { kind: 'go' } | { kind: 'wait'; message: string } | { kind: 'stop'; message: string };

/** Reasons a family cap gives a task it holds. */
export const FAMILY_CAP_STOP = 'BudgetExceeded';
export const FAMILY_CAP_WAIT = 'FamilyBudget';

const usd = (n: number) => `$${roundUSD(n).toFixed(2)}`;

export function finishedOf(status: AgentTaskStatus): FamilySpend {
  return { costUSD: status.costUSD, episodes: Math.max(0, status.episodes - (status.currentEpisode ? 1 : 0)) };
}

const plus = (a: FamilySpend, b: FamilySpend) => ({
  costUSD: a.costUSD + b.costUSD,
  episodes: a.episodes + b.episodes,
});
const minus = (a: FamilySpend, b: FamilySpend) => ({
  costUSD: Math.max(0, a.costUSD - b.costUSD),
  episodes: Math.max(0, a.episodes - b.episodes),
});

/**
 * What a member's next episode is expected to cost against a family cap: its own estimate (budget.ts
 * expectedEpisode, the family's other members standing in for a budget's other tasks), never less than the
 * average finished episode of the whole family.
 */
export function familyEstimate(
  status: AgentTaskStatus,
  others: FamilySpend,
  declaredUSD: number | undefined,
): { usd: number; known: boolean } {
  const own = expectedEpisode(status, { others: { ...others, tokens: 0 }, declaredUSD });
  const mine = finishedOf(status);
  const episodes = others.episodes + mine.episodes;
  const average = episodes > 0 ? (others.costUSD + mine.costUSD) / episodes : 0;
  return { usd: Math.max(own.usd, average), known: own.source !== 'none' || episodes > 0 };
}

/** One cap's answer for a task whose status already accounts for every finished episode. */
export function judgeFamilyCap(cap: FamilyCap, status: AgentTaskStatus, declaredUSD?: number): FamilyVerdict {
  const spent = roundUSD(cap.othersUSD + status.costUSD);
  // A running member is estimated against everyone else's history: this task's included.
  const all = plus(cap.finished, finishedOf(status));
  const runningUSD = cap.running.reduce(
    (sum, r) => sum + familyEstimate(r.status, minus(all, finishedOf(r.status)), r.declaredUSD).usd,
    0,
  );
  const next = familyEstimate(status, cap.finished, declaredUSD);
  const whose = cap.own
    ? `maxCostUSD ${cap.maxCostUSD}`
    : `maxCostUSD ${cap.maxCostUSD} of ${cap.task} (its family's cap)`;
  const by = cap.own ? `by the task (${usd(status.costUSD)}) and its children` : `by ${cap.task}'s family`;
  if (blocks(spent, next.usd, cap.maxCostUSD)) {
    if (spent >= cap.maxCostUSD) return { kind: 'stop', message: `${whose} reached: ${usd(spent)} spent ${by}` };
    const expected = `the next episode is expected to cost ${usd(next.usd)}`;
    return { kind: 'stop', message: `${whose}: ${usd(spent)} spent ${by} and ${expected}` };
  }
  const running = ` (+ ${usd(runningUSD)} expected of ${cap.running.length} episode(s) running)`;
  if (blocks(spent + runningUSD, next.usd, cap.maxCostUSD) || (!next.known && cap.running.length > 0)) {
    const message = `${whose}: ${usd(spent)} spent ${by}${running}; waiting for them to end`;
    return { kind: 'wait', message };
  }
  return { kind: 'go' };
}

/** Every cap of the task: any that stops it stops it; else any that holds it makes it wait. */
export function judgeFamilyCaps(
  caps: readonly FamilyCap[],
  status: AgentTaskStatus,
  declaredUSD?: number,
): FamilyVerdict {
  const verdicts = caps.map((c) => judgeFamilyCap(c, status, declaredUSD));
  return verdicts.find((v) => v.kind === 'stop') ?? verdicts.find((v) => v.kind === 'wait') ?? { kind: 'go' };
}
