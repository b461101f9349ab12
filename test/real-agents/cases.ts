// The scenarios of the real-agent suites: every scenario of the stand-in server, subscriber logins for
// Claude's usage limits and the set-up mistakes (SETUP_VARIANTS); the suites run one per distinct behaviour.
import type { CliName } from '../../scripts/agent-clis/clis.ts';
import { SCENARIOS } from '../model-server/scenarios.ts';
import { FORMATS, SETUP_VARIANTS, type SetupVariant } from './agents.ts';
import { expectedClass, expectedOutcome } from './expectations.ts';
import { taskName } from './support.ts';

export interface Case {
  cli: CliName;
  format: string;
  /** The scenario as the expectations name it: a server scenario, oauth-<scenario> or setup-<variant>. */
  scenario: string;
  /** What goes into the URL (/s/<name>): the scenario, tagged so each case's requests can be counted. */
  urlName: string;
  variant?: SetupVariant;
  name: string;
}

export function scenariosOf(cli: CliName): string[] {
  const scenarios: string[] = [...SCENARIOS];
  // Only a subscriber login makes Claude Code word a 429 as a usage limit.
  if (cli === 'claude') scenarios.push('oauth-usage', 'oauth-usage7d', 'oauth-usage3d', 'oauth-usagenoreset');
  for (const v of SETUP_VARIANTS[cli]) scenarios.push(`setup-${v}`);
  return scenarios;
}

export function makeCase(cli: CliName, format: string, scenario: string): Case {
  const variant = scenario.startsWith('setup-') ? (scenario.slice('setup-'.length) as SetupVariant) : undefined;
  const name = taskName(format, scenario);
  return { cli, format, scenario, urlName: `${variant ? 'ok' : scenario}.${cli}-${name}`, variant, name };
}

/** The main structured format gets the live scenarios; the other formats the success path. */
export const MAIN_FORMAT: Record<CliName, string> = { claude: 'stream-json', codex: 'json', gemini: 'stream-json' };

/** Scenarios run live even when another shares their behaviour: the suites count their requests (no CLI retries). */
const REQUEST_COUNTED = ['overloaded', 'ratelimit', 'server500', 'auth401'];

/**
 * The scenarios run live: one per distinct behaviour the controller must show (outcome, error class and the
 * kind of reset), the first in scenariosOf's order, plus REQUEST_COUNTED. Every scenario in every format is
 * proven offline: test/output/real-captures.test.ts classifies the captures of these same CLI versions.
 */
export function liveScenarios(cli: CliName): string[] {
  const seen = new Set<string>();
  return scenariosOf(cli).filter((s) => {
    const key = JSON.stringify([expectedOutcome(cli, s), expectedClass(cli, s)]);
    const fresh = !seen.has(key);
    seen.add(key);
    return fresh || REQUEST_COUNTED.includes(s);
  });
}

/**
 * The cases of both real-agent suites (local and runner): the live scenarios in the main structured format,
 * the success path (tokens, cost, the promise) in the others. Each CLI start costs seconds of CPU.
 */
export function suiteCases(cli: CliName): Case[] {
  const others = FORMATS[cli].filter((f) => f !== MAIN_FORMAT[cli]).map((f) => makeCase(cli, f, 'ok'));
  return [...liveScenarios(cli).map((s) => makeCase(cli, MAIN_FORMAT[cli], s)), ...others];
}

/** Cases that only end by episodic's timeout: keep their timeout short. */
export function hangs(c: Case): boolean {
  return c.scenario === 'hang' || (c.cli === 'codex' && c.scenario === 'setup-down');
}

/** Priced so codex and gemini get a cost (they report tokens only); cache writes priced on their own. */
export const PRICING = { inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.125, cacheWritePerMTok: 1.5 };
