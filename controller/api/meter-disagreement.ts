// The gateway's meter against the agent's own report (issue 29 §2): status and budgets count the meter; the
// record keeps both and notes when they are far apart, which means one of them is wrong (a CLI's price table
// out of date, requests the agent did not count, or a request that bypassed the gateway). Pure.
import type { TokenCounts } from './bounds.ts';
import { totalTokens } from './bounds.ts';

/**
 * "Large": the two differ by more than a quarter of the larger. CLIs price with tables of their own and leave
 * out side requests (titles, token counts, their own retries) and some cache tokens: a few percent to ~20 %
 * apart is what that ordinarily comes to, so a quarter is past the noise and well short of a missed loop.
 */
export const LARGE_DISAGREEMENT_RATIO = 0.25;
/** Differences below these are rounding on a tiny episode, never noted. */
export const DISAGREEMENT_FLOOR_USD = 0.01;
export const DISAGREEMENT_FLOOR_TOKENS = 1000;

interface Spend {
  costUSD: number;
  tokens?: Pick<TokenCounts, 'input' | 'output'>;
}

const far = (a: number, b: number, floor: number) =>
  Math.abs(a - b) > floor && Math.abs(a - b) > LARGE_DISAGREEMENT_RATIO * Math.max(a, b);

/** A one-line note when the agent's report and the meter are far apart; undefined when close or nothing to compare. */
export function meterDisagreement(agent: Spend, metered: Spend): string | undefined {
  const agentTokens = agent.tokens ? totalTokens(agent.tokens) : 0;
  // An agent that reported nothing (plain-text output) has nothing to disagree with.
  if (agent.costUSD === 0 && agentTokens === 0) return undefined;
  const gwTokens = metered.tokens ? totalTokens(metered.tokens) : 0;
  const parts: string[] = [];
  if (far(agent.costUSD, metered.costUSD, DISAGREEMENT_FLOOR_USD))
    parts.push(
      `cost: the agent reported $${agent.costUSD.toFixed(4)}, the gateway metered $${metered.costUSD.toFixed(4)}`,
    );
  if (agentTokens > 0 && far(agentTokens, gwTokens, DISAGREEMENT_FLOOR_TOKENS))
    parts.push(`tokens (input + output): the agent reported ${agentTokens}, the gateway metered ${gwTokens}`);
  if (parts.length === 0) return undefined;
  return `${parts.join('; ')} (more than ${LARGE_DISAGREEMENT_RATIO * 100} % apart; status counts the gateway's figure)`;
}
