// What tokens cost, from a PricingSchema (USD per million tokens): one home for the agent's own pricing
// (spec.agent.pricing) and the gateway's (AgentCredentials.spec.pricing).
import type { z } from 'zod';
import type { PricingSchema } from './agent-task.ts';
import type { TokenCounts } from './bounds.ts';

export type Pricing = z.infer<typeof PricingSchema>;

/** USD. Cache rates default to the input rate: overestimating keeps maxCostUSD a safe cap. */
export function costFromTokens(tokens: TokenCounts, pricing: Pricing): number {
  const cacheRead = pricing.cacheReadPerMTok ?? pricing.inputPerMTok;
  const cacheWrite = pricing.cacheWritePerMTok ?? pricing.inputPerMTok;
  const micro =
    tokens.input * pricing.inputPerMTok +
    tokens.output * pricing.outputPerMTok +
    tokens.cacheRead * cacheRead +
    tokens.cacheWrite * cacheWrite;
  return micro / 1_000_000;
}
