// The episode runner (`episodic episode -- argv`, what runs inside an episode pod) with a real CLI as the
// agent: the termination message the cluster controller reads, the exit code, and what `kubectl logs`
// shows. Every scenario in the CLI's main structured format, the success path in its other formats.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nextMidnight } from '../../controller/executors/output/zoned-time.ts';
import type { CliName } from '../../scripts/agent-clis/clis.ts';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { agentRun, baseEnv } from './agents.ts';
import { hangs, PRICING, suiteCases, type Case } from './cases.ts';
import { expectedClass, expectedOutcome, resetWindow } from './expectations.ts';
import { mapLimit } from './limit.ts';
import {
  assertEnded,
  episodeRunner,
  ensureClis,
  RUNNER_HANG_GUARD_MS,
  scratchDir,
  skipRealAgents,
  type RunnerRun,
} from './support.ts';

const PROMPT = 'Do the next step of the plan.';

export interface RunnerTarget {
  c: Case;
  serverUrl: string;
  root: string;
  /** Extra completion settings (resetTimeZone). */
  completion?: Record<string, unknown>;
  /** Wraps the agent's argv (e.g. ['env', 'TZ=Asia/Tokyo']). */
  wrap?: string[];
  runnerTz?: string;
}

export function runCase(t: RunnerTarget): Promise<RunnerRun> {
  const { c } = t;
  const dir = path.join(t.root, c.name);
  const run = agentRun(c.cli, c.format, {
    serverUrl: t.serverUrl,
    scenarioName: c.urlName,
    home: path.join(dir, 'home'),
    variant: c.variant,
  });
  const ws = path.join(dir, 'ws');
  return episodeRunner({
    argv: [...(t.wrap ?? []), ...run.command],
    config: {
      task: c.name,
      namespace: 'default',
      episode: 1,
      maxEpisodes: 1,
      promptVia: run.promptVia,
      output: run.output,
      pricing: PRICING,
      completion: { promise: 'DONE', ...t.completion },
      timeoutSeconds: hangs(c) ? 5 : 90,
      workspaceDir: ws,
    },
    prompt: PROMPT,
    // In a pod the agent's env is the container's, which the runner has too.
    env: { ...baseEnv({ TZ: t.runnerTz ?? 'UTC', TMPDIR: path.join(dir, 'tmp') }), ...run.env },
    dir: path.join(dir, 'runner'),
  });
}

export function defineRunnerSuite(cli: CliName, concurrency: number): void {
  const cases = suiteCases(cli);
  // Every runner is bounded by its own hang guard: the suite's limit is that worst case, never reached.
  const suite = {
    skip: skipRealAgents,
    timeout: Math.ceil(cases.length / concurrency) * RUNNER_HANG_GUARD_MS + 60_000,
  };
  describe(`${cli}: episodic episode (the in-pod runner) with the real CLI`, suite, () => {
    let server: ModelServer;
    let scratch: ReturnType<typeof scratchDir>;
    const runs = new Map<string, RunnerRun>();
    let from = 0;
    let to = 0;

    before(async () => {
      await ensureClis();
      server = await startModelServer();
      scratch = scratchDir(`${cli}-runner`);
      from = Date.now();
      const started = Date.now();
      await mapLimit(cases, concurrency, async (c) => {
        const { mkdirSync } = await import('node:fs');
        mkdirSync(path.join(scratch.dir, c.name, 'ws'), { recursive: true });
        mkdirSync(path.join(scratch.dir, c.name, 'tmp'), { recursive: true });
        runs.set(c.name, await runCase({ c, serverUrl: server.url, root: scratch.dir }));
      });
      to = Date.now();
      console.log(`# ${cli} runner: ${cases.length} episodes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    });
    after(async () => {
      await server?.close();
      scratch?.remove();
    });

    for (const c of cases) {
      it(`${c.format} ${c.scenario}`, () => {
        const run = runs.get(c.name)!;
        assertEnded(run);
        const r = run.result;
        assert.ok(r, `no termination message; runner stderr: ${run.stderr.slice(-1500)}`);
        const outcome = expectedOutcome(cli, c.scenario);
        const want = expectedClass(cli, c.scenario);
        if (outcome === 'timeout') {
          assert.equal(r.timedOut, true);
          assert.match(r.message ?? '', /^timed out after 5s/);
          // Killed: the agent's code if it exited on the SIGTERM (claude: 143), else 1.
          assert.equal(run.code, r.exitCode ?? 1);
        } else {
          assert.equal(r.errorClass, want.errorClass, `message: ${r.message}`);
          assert.equal(r.completion, want.completion);
          // The pod exits with the agent's code (mod 256, as the CLI's own process did).
          assert.equal(run.code, r.exitCode);
        }
        if (want.errorClass !== 'none') {
          assert.ok((r.message ?? '').length > 10, `message: ${r.message}`);
          assert.doesNotMatch(r.message ?? '', /\bat .+\.js:\d+|\[object Object\]|^\s*[{}]/);
        }
        if (want.reset === 'none') assert.equal(r.resetAt, undefined);
        else if (want.reset === 'pacificMidnight') {
          const options = [from, to].map((t) => nextMidnight(new Date(t), 'America/Los_Angeles')?.toISOString());
          assert.ok(options.includes(r.resetAt), `resetAt ${r.resetAt}`);
        } else if (want.reset) {
          const [lo, hi] = resetWindow(want.reset, from, to);
          const at = Date.parse(r.resetAt ?? '');
          assert.ok(at >= lo && at <= hi, `resetAt ${r.resetAt}`);
        }
        // kubectl logs: the runner's own lines, and the agent's output as it printed it.
        assert.match(run.stderr, /episodic: episode finished: /);
        if (c.scenario === 'ok') assert.match(run.stdout, /<promise>DONE<\/promise>/);
      });
    }

    it('tokens and cost travel in the termination message', () => {
      const ok = runs.get(cases.find((c) => c.scenario === 'ok' && c.format !== 'text')!.name)!.result!;
      const expected = {
        claude: { tokens: { input: 1234, output: 56, cacheRead: 200, cacheWrite: 100 }, cost: 0.006596 },
        codex: { tokens: { input: 1150, output: 70, cacheRead: 300, cacheWrite: 50 }, cost: 0.00225 },
        gemini: { tokens: { input: 1000, output: 100, cacheRead: 400, cacheWrite: 0 }, cost: 0.0023 },
      }[cli];
      assert.deepEqual(ok.tokens, expected.tokens);
      assert.ok(Math.abs(ok.costUSD - expected.cost) < 1e-12, String(ok.costUSD));
    });
  });
}
