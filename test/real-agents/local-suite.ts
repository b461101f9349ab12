// `episodic run` with a real CLI as the agent: one spec directory with a task per case (cases.ts suiteCases:
// one scenario per distinct behaviour in the main format, the success path in the others), one controller run
// with bounded parallelism, then each task's status, its end event and `episodic logs` against what the
// README's outcome table promises.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Phase } from '../../controller/api/agent-task.ts';
import type { StoredStatus } from '../../controller/sinks/local/file-status.ts';
import { nextMidnight } from '../../controller/executors/output/zoned-time.ts';
import type { CliName } from '../../scripts/agent-clis/clis.ts';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { agentRun, baseEnv } from './agents.ts';
import { hangs, MAIN_FORMAT, PRICING, suiteCases, type Case } from './cases.ts';
import { expectedClass, expectedOutcome, resetWindow } from './expectations.ts';
import {
  assertEnded,
  episodic,
  ensureClis,
  HANG_GUARD_MS,
  scratchDir,
  skipRealAgents,
  type EpisodicRun,
  type LogLine,
} from './support.ts';

const PHASE_OF: Record<string, Phase> = {
  succeeded: 'Succeeded',
  fatal: 'Failed',
  failed: 'Skipped',
  timeout: 'Skipped',
  // maxEpisodes 1: an episode that neither finishes nor fails the task reaches the cap...
  continue: 'NeedsReview',
  // ...but an outage or a usage limit never spends maxEpisodes: the task waits (an hour's backoff here).
  transient: 'Waiting',
  usageLimit: 'Waiting',
};

/** Not a key any CLI or server would print on its own: if it shows up in status or our log, we leaked it. */
export const SECRET_KEY = 'sk-episodic-real-agents-DO-NOT-LEAK-7f3a9c';

export interface LocalSuiteOptions {
  cli: CliName;
  /** --max-concurrent: how many of this CLI run at once (2 cores shared with the other suites). */
  concurrency: number;
  /**
   * The agent's own zone (`agent.env` TZ; the controller runs in UTC), given to the spec as
   * completion.resetTimeZone: codex prints reset times in it, without a zone.
   */
  agentTz?: string;
}

function taskSpec(c: Case, serverUrl: string, root: string, agentTz: string | undefined): Record<string, unknown> {
  const run = agentRun(c.cli, c.format, {
    serverUrl,
    scenarioName: c.urlName,
    home: path.join(root, 'home', c.name),
    variant: c.variant,
  });
  // The key the CLI is given: distinctive, so a leak into status or our log can be seen.
  const env = Object.entries(run.env).map(([name, value]) => ({ name, value: value === 'dummy' ? SECRET_KEY : value }));
  if (agentTz) env.push({ name: 'TZ', value: agentTz });
  return {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name: c.name },
    spec: {
      prompt: 'Do the next step of the plan. (episode {{episode}} of {{maxEpisodes}})',
      agent: { command: run.command, promptVia: run.promptVia, output: run.output, env, pricing: PRICING },
      workspace: `ws/${c.name}`,
      completion: { promise: 'DONE', ...(agentTz ? { resetTimeZone: agentTz } : {}) },
      limits: { maxEpisodes: 1, maxConsecutiveFailures: 1, episodeTimeoutSeconds: hangs(c) ? 5 : 90 },
      backoff: { initialSeconds: 3600, factor: 1, maxSeconds: 3600 },
    },
  };
}

export function defineLocalSuite(opts: LocalSuiteOptions): void {
  const { cli } = opts;
  const cases = suiteCases(cli);
  // Above the run's hang guard, so a hung run fails with the guard's message, not a cancellation.
  const suite = { skip: skipRealAgents, timeout: HANG_GUARD_MS + 120_000 };
  describe(`${cli}: episodic run with the real CLI`, suite, () => {
    let server: ModelServer;
    let scratch: ReturnType<typeof scratchDir>;
    let dir: string;
    let run: EpisodicRun;
    let startedAt: number;
    const env = (): Record<string, string> => baseEnv({ HOME: path.join(scratch.dir, 'controller-home'), TZ: 'UTC' });

    before(async () => {
      await ensureClis();
      server = await startModelServer();
      scratch = scratchDir(`${cli}-local`);
      dir = path.join(scratch.dir, 'specs');
      mkdirSync(dir, { recursive: true });
      for (const c of cases)
        writeFileSync(
          path.join(dir, `${c.name}.yaml`),
          JSON.stringify(taskSpec(c, server.url, scratch.dir, opts.agentTz), null, 2),
        );
      startedAt = Date.now();
      // Transient errors and usage limits leave their task waiting: the run is interrupted once every
      // task's first episode has ended.
      const ended = (lines: LogLine[]) => cases.every((c) => lines.some((l) => isEndEvent(c, l)));
      run = await episodic(['run', dir, '--max-concurrent', String(opts.concurrency)], env(), { interruptWhen: ended });
      console.log(`# ${cli}: ${cases.length} episodes in ${run.seconds.toFixed(1)} s`);
    });
    after(async () => {
      await server?.close();
      scratch?.remove();
    });

    const status = (c: Case): StoredStatus['status'] => {
      assertEnded(run);
      const file = path.join(dir, '.episodic', 'status', 'default', `${c.name}.json`);
      assert.ok(existsSync(file), `no status for ${c.name}; controller stderr: ${run.stderr.slice(-2000)}`);
      return (JSON.parse(readFileSync(file, 'utf8')) as StoredStatus).status;
    };
    const endEvent = (c: Case): LogLine | undefined => run.lines.find((l) => isEndEvent(c, l));
    const episodeRecord = (c: Case, n: number): { outcome?: string; message?: string } | undefined => {
      assertEnded(run);
      const file = path.join(dir, '.episodic', 'logs', 'default', c.name, 'episodes.jsonl');
      const records = readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      return records.reverse().find((r) => r.number === n);
    };

    it('runs every task to the end of its episode; no controller error', () => {
      assertEnded(run);
      // 130: interrupted once every episode ended (tasks waiting out a backoff or a limit remain).
      const waits = cases.some((c) => ['transient', 'usageLimit'].includes(expectedOutcome(cli, c.scenario)));
      assert.equal(run.code, waits ? 130 : 1, run.stderr.slice(-3000));
      assert.ok(run.lines.length > cases.length, 'the controller logged its events');
      assert.deepEqual(
        run.lines.filter((l) => l.level === 'error' || l.level === 'fatal'),
        [],
        'error lines in the controller log',
      );
    });

    for (const c of cases) {
      it(`${c.format} ${c.scenario} → ${expectedOutcome(cli, c.scenario)}`, () => {
        const s = status(c);
        const outcome = expectedOutcome(cli, c.scenario);
        const want = expectedClass(cli, c.scenario);
        const event = endEvent(c);
        // Episode 1 as recorded. A limit that lifted during the run (Gemini's midnight Pacific can fall
        // inside it) legitimately started episode 2, which the interrupt then cancelled.
        const first = episodeRecord(c, 1);
        const resetAt = Date.parse(RESUMING.exec(String(event?.msg ?? ''))?.[1] ?? '');
        const liftedDuringRun = outcome === 'usageLimit' && resetAt <= Date.now();
        assert.equal(first?.outcome, outcome, `message: ${first?.message}`);
        if (!liftedDuringRun) {
          assert.equal(s.phase, PHASE_OF[outcome], s.message);
          assert.equal(s.episodes, 1);
        }
        if (outcome !== 'timeout') assert.equal(event?.errorClass, want.errorClass, JSON.stringify(event));
        const message = first?.message ?? '';
        if (outcome === 'timeout') assert.match(message, /^timed out after 5s/);
        else if (outcome !== 'succeeded' && outcome !== 'continue') {
          assert.ok(message.length > 10, `message: ${message}`);
          assert.doesNotMatch(message, /\bat .+\.js:\d+|\[object Object\]|^\s*[{}]/);
        }
        if (want.reset) checkReset(c, event, want.reset, startedAt, Date.now());
        if (c.scenario === 'toolong400') assert.equal(s.reason, 'ContextTooLong');
        assert.equal(
          server.requestsFor(c.urlName).filter((r) => r.api === 'unknown').length,
          0,
          'requests the stand-in does not know',
        );
      });
    }

    it('cost and tokens of a finished turn, as the CLI reported them (priced for codex and gemini)', () => {
      for (const c of cases.filter((x) => x.scenario === 'ok' && x.format !== 'text')) {
        const s = status(c);
        if (cli === 'claude') {
          assert.deepEqual(s.tokens, { input: 1234, output: 56, cacheRead: 200, cacheWrite: 100 });
          assert.equal(s.costUSD, 0.006596);
        } else if (cli === 'codex') {
          assert.deepEqual(s.tokens, { input: 1150, output: 70, cacheRead: 300, cacheWrite: 50 });
          assert.equal(s.costUSD, 0.00225); // 1150×1.25 + 70×10 + 300×0.125 + 50×1.5 µ$
        } else {
          assert.deepEqual(s.tokens, { input: 1000, output: 100, cacheRead: 400, cacheWrite: 0 });
          assert.equal(s.costUSD, 0.0023); // 1000×1.25 + (80 + 20 thoughts)×10 + 400×0.125 µ$
        }
        // The episode's own cost is kept as reported; the running total is rounded to the micro-dollar.
        assert.ok(
          Math.abs((s.lastEpisode?.costUSD ?? 0) - s.costUSD) < 1e-9,
          `${s.lastEpisode?.costUSD} vs ${s.costUSD}`,
        );
      }
    });

    it('the CLI made one request per episode: its own retries are off', () => {
      assertEnded(run);
      for (const c of cases.filter((x) => ['overloaded', 'server500', 'ratelimit', 'auth401'].includes(x.scenario))) {
        assert.equal(
          server.requestsFor(c.urlName).length,
          1,
          `${c.name}: ${server.requestsFor(c.urlName).length} requests`,
        );
      }
    });

    it('episodic logs shows what the CLI printed', async () => {
      assertEnded(run);
      const ok = cases.find((c) => c.scenario === 'ok' && c.format !== 'text')!;
      const logs = await episodic(['logs', ok.name, '--dir', dir], env());
      assert.equal(logs.code, 0, logs.stderr);
      assert.match(logs.stdout, /<promise>DONE<\/promise>/);
      const failed = cases.find((c) => c.scenario === 'overloaded' && c.format === MAIN_FORMAT[cli])!;
      const failedLogs = await episodic(['logs', failed.name, '--dir', dir], env());
      assert.ok(
        failedLogs.stdout.includes(status(failed).lastEpisode?.message?.slice(0, 40) ?? '\0'),
        failedLogs.stdout,
      );
    });

    it('the API key never reaches status or the controller log', () => {
      assertEnded(run);
      assert.ok(!run.stdout.includes(SECRET_KEY) && !run.stderr.includes(SECRET_KEY));
      for (const c of cases) assert.ok(!JSON.stringify(status(c)).includes(SECRET_KEY), c.name);
    });
  });
}

function isEndEvent(c: Case, l: LogLine): boolean {
  return l.task === c.name && l.episode === 1 && l.event !== 'EpisodeStarted' && typeof l.outcome === 'string';
}

const RESUMING = /resuming at (\S+?)$/;

/** The UsageLimit event says when the task resumes: the reset the CLI reported (or an hour). */
function checkReset(
  c: Case,
  event: LogLine | undefined,
  reset: NonNullable<ReturnType<typeof expectedClass>['reset']>,
  from: number,
  to: number,
): void {
  const at = Date.parse(RESUMING.exec(String(event?.msg ?? ''))?.[1] ?? '');
  assert.ok(Number.isFinite(at), `${c.name}: no resume time in ${JSON.stringify(event)}`);
  if (reset === 'none') {
    assert.ok(
      at >= from + 3_600_000 - 1000 && at <= to + 3_600_000,
      `${c.name}: ${new Date(at).toISOString()} is not an hour on`,
    );
  } else if (reset === 'pacificMidnight') {
    const expected = [
      nextMidnight(new Date(from), 'America/Los_Angeles'),
      nextMidnight(new Date(to), 'America/Los_Angeles'),
    ].map((d) => d?.getTime());
    assert.ok(expected.includes(at), `${c.name}: ${new Date(at).toISOString()}`);
  } else {
    const [lo, hi] = resetWindow(reset, from, to);
    assert.ok(at >= lo && at <= hi, `${c.name}: ${new Date(at).toISOString()}`);
  }
}
