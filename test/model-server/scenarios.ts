// What the stand-in model server answers, by scenario: the base URL a CLI is given ends in /s/<scenario>.
// The same names as ../shared/agent-outputs/real/README.md, plus a few more usage-limit shapes.

export const SCENARIOS = [
  'ok',
  'more',
  'overloaded',
  'ratelimit',
  'server500',
  'auth401',
  'forbidden403',
  'bad400',
  'toolong400',
  'usage',
  'usage7d',
  'usage3d',
  'usagenoreset',
  'apilimit',
  'billing',
  'hang',
  'drop',
] as const;
/**
 * Scenarios no suite runs in every format: `toolloop` answers every request with a call of a read-only tool
 * (Claude's Glob, Codex's exec_command, Gemini's glob), so a CLI loops until something stops it (the
 * gateway's hard stop); it spends TOOL_LOOP_USAGE a request, in every API.
 */
export const EXTRA_SCENARIOS = ['toolloop'] as const;
export type Scenario = (typeof SCENARIOS)[number] | (typeof EXTRA_SCENARIOS)[number];

/** Usage of one toolloop answer: at $3/$20 per MTok (input/output) that is $0.05 a request. */
export const TOOL_LOOP_USAGE = { input: 10_000, output: 1000 } as const;

export const PROMISE = 'DONE';
export const DONE_TEXT = `All steps are finished and checked. <promise>${PROMISE}</promise>`;
export const MORE_TEXT = 'I made progress on the first step; more remains.';

/** Usage the server reports on a finished turn, per API. */
export const USAGE = {
  anthropic: { input: 1234, output: 56, cacheRead: 200, cacheWrite: 100 },
  // OpenAI input_tokens includes the cached share; cache writes are reported beside it.
  openai: { input: 1500, cached: 300, cacheWrite: 50, output: 70, reasoning: 10 },
  // Gemini promptTokenCount includes the cached share; thoughts are billed as output.
  gemini: { prompt: 1400, cached: 400, candidates: 80, thoughts: 20 },
} as const;

/** When a usage limit lifts, seconds from now: 2 h, except usage3d (3 days). */
export function resetInSeconds(scenario: Scenario): number | undefined {
  if (scenario === 'usage' || scenario === 'usage7d') return 2 * 3600;
  if (scenario === 'usage3d') return 3 * 86_400;
  return undefined;
}

/**
 * `/s/oauth-usage` is `usage`: the prefix only tells the test to log the CLI in as a subscriber. A `.tag`
 * suffix (`/s/ok.claude-json`) is ignored too: it lets each test count its own CLI's requests.
 */
export function parseScenario(name: string): Scenario | undefined {
  const bare = name.replace(/^oauth-/, '').replace(/\..*$/, '');
  return ([...SCENARIOS, ...EXTRA_SCENARIOS] as readonly string[]).includes(bare) ? (bare as Scenario) : undefined;
}
