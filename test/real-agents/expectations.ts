// What the README's outcome table promises for each scenario of the stand-in model server, per CLI: the
// one source for the capture test (test/output/real-captures.test.ts) and the end-to-end suites here.
import type { Outcome } from '../../controller/api/agent-task.ts';
import type { ErrorClass } from '../../controller/api/episode-result.ts';
import type { CliName } from '../../scripts/agent-clis/clis.ts';

export const HOUR_MS = 3_600_000;

/** Where a reset must fall for a request made between two instants (ms). */
export function resetWindow(
  reset: { afterMs: number } | { utcMidnightDaysOn: number },
  from: number,
  to: number,
): [number, number] {
  if ('afterMs' in reset) return [from + reset.afterMs - 61_000, to + reset.afterMs]; // printed to the minute
  const midnight = (t: number) => {
    const d = new Date(t + reset.utcMidnightDaysOn * 86_400_000);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  };
  return [midnight(from), midnight(to)];
}

/** When the limit lifts: this long after the request, at the next midnight Pacific, or not said. */
export type ResetExpectation = { afterMs: number } | { utcMidnightDaysOn: number } | 'pacificMidnight' | 'none';

export interface Expectation {
  errorClass: ErrorClass;
  reset?: ResetExpectation;
  /** A clean exit: the promise (ok) or none (more). */
  completion?: 'promise';
}

export function expectedClass(cli: CliName, scenario: string): Expectation {
  if (scenario === 'ok') return { errorClass: 'none', completion: 'promise' };
  // hang: killed (episodic's timeout decides); maxturns: gemini's turn limit, an ordinary failure.
  if (['more', 'hang', 'setup-maxturns'].includes(scenario)) return { errorClass: 'none' };
  // Claude falls back to a non-streaming request when a stream is cut, and that one succeeds.
  if (scenario === 'drop')
    return cli === 'claude' ? { errorClass: 'none', completion: 'promise' } : { errorClass: 'transient' };
  if (['overloaded', 'ratelimit', 'server500', 'setup-down'].includes(scenario)) return { errorClass: 'transient' };
  if (scenario === 'toolong400') return { errorClass: 'contextTooLong' };
  // Anthropic's API spend limit names a day (00:00 UTC, three days on); the others answer it as a limit without a reset.
  if (scenario === 'apilimit') {
    if (cli === 'claude') return { errorClass: 'usageLimit', reset: { utcMidnightDaysOn: 3 } };
    return { errorClass: 'usageLimit', reset: cli === 'gemini' ? 'pacificMidnight' : 'none' };
  }
  if (/^(?:oauth-)?usage/.test(scenario)) {
    // An API key gets a plain 429 from Claude Code ("Request rejected (429)"): a rate limit, not a usage limit.
    if (cli === 'claude' && !scenario.startsWith('oauth-')) return { errorClass: 'transient' };
    const bare = scenario.replace(/^oauth-/, '');
    if (cli === 'gemini' && bare !== 'usage3d') return { errorClass: 'usageLimit', reset: 'pacificMidnight' };
    if (bare === 'usagenoreset') return { errorClass: 'usageLimit', reset: 'none' };
    return { errorClass: 'usageLimit', reset: { afterMs: bare === 'usage3d' ? 72 * HOUR_MS : 2 * HOUR_MS } };
  }
  return { errorClass: 'fatal' }; // auth401, forbidden403, bad400, billing, setup-nokey/untrusted/noauthtype
}

/** The episode's outcome in status (defaults: completion.contextTooLong fatal; a killed episode times out). */
export function expectedOutcome(cli: CliName, scenario: string): Outcome {
  // Codex waits for a server that is down forever ("Reconnecting... waiting for network"): the timeout ends it.
  if (scenario === 'hang' || (cli === 'codex' && scenario === 'setup-down')) return 'timeout';
  const e = expectedClass(cli, scenario);
  if (e.errorClass === 'none') return e.completion ? 'succeeded' : scenario === 'more' ? 'continue' : 'failed';
  return e.errorClass === 'contextTooLong' ? 'fatal' : e.errorClass;
}
