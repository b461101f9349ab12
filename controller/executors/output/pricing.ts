// Cost for agents that report tokens but no cost (codex, gemini), from spec.agent.pricing: the rule is
// api/pricing.ts (the gateway prices with it too).
export { costFromTokens } from '../../api/pricing.ts';
export type { Pricing } from '../../api/pricing.ts';
