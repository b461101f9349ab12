// Cost for agents that report tokens but no cost (codex, gemini), from spec.agent.pricing.
import type { Tokens } from '../../api/agent-task.ts';
import type { AnalyzerOptions } from './types.ts';

export type Pricing = NonNullable<AnalyzerOptions['pricing']>;

/** USD. Cache rates default to the input rate: overestimating keeps maxCostUSD a safe cap. */
export function costFromTokens(tokens: Tokens, pricing: Pricing): number {
  const cacheRead = pricing.cacheReadPerMTok ?? pricing.inputPerMTok;
  const cacheWrite = pricing.cacheWritePerMTok ?? pricing.inputPerMTok;
  const micro =
    tokens.input * pricing.inputPerMTok +
    tokens.output * pricing.outputPerMTok +
    tokens.cacheRead * cacheRead +
    tokens.cacheWrite * cacheWrite;
  return micro / 1_000_000;
}
