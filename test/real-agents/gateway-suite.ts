// A real CLI behind the model gateway, in `episodic run` (issue 29): the model server sees the real key on
// every request, the agent's environment and argv hold only its token, the tokens metered are what the server
// sent, and a never-ending tool loop at $0.05 a request stops at maxCostUSD 1 (spend ≤ $1.05), recorded as
// BudgetExceeded. Two episodes per CLI: each start costs seconds.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CliName } from '../../scripts/agent-clis/clis.ts';
import { startModelServer, type ModelServer, type RecordedRequest } from '../model-server/server.ts';
import { TOOL_LOOP_USAGE } from '../model-server/scenarios.ts';
import { agentRun, baseEnv } from './agents.ts';
import { assertEnded, ensureClis, episodic, HANG_GUARD_MS, scratchDir, skipRealAgents } from './support.ts';
import type { EpisodicRun } from './support.ts';

export const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };
type Tokens = { input: number; output: number; cacheRead: number; cacheWrite: number };

export interface GatewaySuite {
  cli: CliName;
  provider: 'anthropic' | 'openai' | 'gemini';
  format: string;
  /** The real key, distinctive enough that any copy of it is found. */
  realKey: string;
  /** The controller's own variable for the key (the credential's env) and a standard one it must not pass on. */
  keyVar: string;
  /** spec.agent.env names the gateway sets itself: taken out of the CLI's usual run. */
  gatewaySets: readonly string[];
  /** The token and URL variables the agent must hold. */
  tokenVar: string;
  urlVar?: string;
  /** What one answered request of the `ok` scenario meters at. */
  okTokens: Tokens;
  /** Requests that are model calls (metered); the rest (token counts) are forwarded too. */
  isModelCall: (r: RecordedRequest) => boolean;
  /** Further checks on what the run left (the state directory, the records). */
  extra?: (o: { dir: string; run: EpisodicRun; server: ModelServer; realKey: string }) => void;
}

function credentials(s: GatewaySuite, name: string, upstream: string): object {
  return {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentCredentials',
    metadata: { name },
    spec: { provider: s.provider, upstream, credentials: [{ name: 'main', env: s.keyVar }], pricing: { '*': PRICE } },
  };
}

function task(s: GatewaySuite, name: string, creds: string, root: string, limits: object): object {
  const run = agentRun(s.cli, s.format, {
    serverUrl: 'http://127.0.0.1:1',
    scenarioName: 'unused',
    home: path.join(root, 'home', name),
  });
  const env = Object.entries(run.env)
    .filter(([k]) => !s.gatewaySets.includes(k))
    .map(([k, value]) => ({ name: k, value }));
  return {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name },
    spec: {
      prompt: 'Do the next step.',
      agent: { command: run.command, promptVia: run.promptVia, output: run.output, env, credentials: creds },
      workspace: `ws/${name}`,
      completion: { promise: 'DONE' },
      limits: { maxEpisodes: 1, episodeTimeoutSeconds: 120, ...limits },
    },
  };
}

const vars = (environ: string) =>
  new Map(
    environ
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );

export function defineGatewaySuite(s: GatewaySuite): void {
  const tag = `gw-${s.cli}`;
  describe(`${s.cli} behind the model gateway (episodic run)`, {
    skip: skipRealAgents,
    timeout: HANG_GUARD_MS + 60_000,
  }, () => {
    let server: ModelServer;
    let scratch: ReturnType<typeof scratchDir>;
    let dir: string;
    let run: EpisodicRun;
    /** /proc/PID/environ and cmdline of each agent, read as it started. */
    const procs = new Map<string, { environ: string; cmdline: string }>();

    before(async () => {
      await ensureClis();
      server = await startModelServer();
      scratch = scratchDir(tag);
      dir = path.join(scratch.dir, 'specs');
      mkdirSync(dir, { recursive: true });
      const docs = [
        credentials(s, 'ok-creds', `${server.url}/s/ok.${tag}`),
        credentials(s, 'loop-creds', `${server.url}/s/toolloop.${tag}`),
        task(s, 'ok', 'ok-creds', scratch.dir, {}),
        task(s, 'loop', 'loop-creds', scratch.dir, { maxCostUSD: 1 }),
      ];
      writeFileSync(path.join(dir, 'tasks.yaml'), docs.map((d) => JSON.stringify(d)).join('\n---\n'));
      const env = baseEnv({
        HOME: path.join(scratch.dir, 'controller-home'),
        TZ: 'UTC',
        [s.keyVar]: s.realKey,
        // The controller's own key under the standard name: the agent must not inherit it.
        [s.tokenVar]: s.realKey,
      });
      run = await episodic(['run', dir, '--max-concurrent', '2'], env, {
        interruptWhen: (lines) => {
          for (const l of lines) {
            const pid = l.agentPid;
            if (l.event !== 'EpisodeStarted' || typeof l.task !== 'string' || typeof pid !== 'number') continue;
            if (procs.has(l.task)) continue;
            try {
              const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
              procs.set(l.task, { environ, cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8') });
            } catch {
              // already gone (the ok task may end first): the loop task's is checked
            }
          }
          return false;
        },
      });
    });
    after(async () => {
      await server?.close();
      scratch?.remove();
    });

    const status = (name: string) =>
      JSON.parse(readFileSync(path.join(dir, '.episodic', 'status', 'default', `${name}.json`), 'utf8')).status;
    const record = (name: string) =>
      JSON.parse(
        readFileSync(path.join(dir, '.episodic', 'logs', 'default', name, 'episodes.jsonl'), 'utf8')
          .trim()
          .split('\n')[0] as string,
      );

    it('the model server saw the real key on every request, never the token', () => {
      assertEnded(run);
      const requests = server.requests.filter((r) => r.scenarioName.endsWith(`.${tag}`));
      assert.ok(requests.length >= 2, run.stderr.slice(-3000));
      for (const r of requests) assert.equal(r.credential, s.realKey, `${r.method} ${r.path}`);
      assert.deepEqual(
        requests.filter((r) => r.api === 'unknown'),
        [],
      );
    });

    it("the agent's environment and argv hold its token and the gateway URL, not the key", () => {
      assertEnded(run);
      const proc = procs.get('loop');
      assert.ok(proc, `no environ read; ${JSON.stringify(run.lines.filter((l) => l.event === 'EpisodeStarted'))}`);
      assert.ok(!proc.environ.includes(s.realKey), 'the real key is in the agent environment');
      assert.ok(!proc.cmdline.includes(s.realKey), 'the real key is in the agent argv');
      const env = vars(proc.environ);
      assert.equal(env.has(s.keyVar), false);
      assert.match(env.get(s.tokenVar) ?? '', /^episodic-gw-[A-Za-z0-9_-]{43}$/);
      if (s.urlVar) assert.match(env.get(s.urlVar) ?? '', /^http:\/\/127\.0\.0\.1:\d+\/t\/default\/loop(\/v1)?$/);
      assert.ok(!run.stdout.includes(s.realKey) && !run.stderr.includes(s.realKey), 'the key is in the log');
      s.extra?.({ dir, run, server, realKey: s.realKey });
    });

    it('the tokens metered are what the server sent; status counts the metered figure', () => {
      assertEnded(run);
      const st = status('ok');
      assert.equal(st.phase, 'Succeeded', st.message);
      const r = record('ok');
      const all = server.requestsFor(`ok.${tag}`);
      const n = all.filter(s.isModelCall).length;
      console.log(`# ${s.cli} ok: ${all.map((q) => `${q.method} ${q.path}${q.query} → ${q.status}`).join('; ')}`);
      assert.ok(n >= 1);
      assert.equal(r.gateway.requests, all.length);
      const t = s.okTokens;
      assert.deepEqual(r.gateway.tokens, {
        input: t.input * n,
        output: t.output * n,
        cacheRead: t.cacheRead * n,
        cacheWrite: t.cacheWrite * n,
      });
      assert.equal(st.costUSD, r.gateway.costUSD);
      assert.ok(!JSON.stringify(st).includes(s.realKey) && !JSON.stringify(r).includes(s.realKey));
    });

    it('a never-ending tool loop stops at maxCostUSD 1: spend ≤ $1.05, recorded BudgetExceeded', () => {
      assertEnded(run);
      const st = status('loop');
      const r = record('loop');
      const forwarded = server.requestsFor(`toolloop.${tag}`).filter(s.isModelCall).length;
      console.log(
        `# ${s.cli} tool loop: ${forwarded} requests forwarded, metered $${r.gateway.costUSD}, episode ${r.startedAt} → ${r.finishedAt}`,
      );
      assert.ok(forwarded >= 20, `${forwarded} requests`);
      assert.ok(r.gateway.costUSD >= 1 && r.gateway.costUSD <= 1.05, `spent ${r.gateway.costUSD}`);
      assert.equal(r.gateway.costUSD, (forwarded * (TOOL_LOOP_USAGE.input * 3 + TOOL_LOOP_USAGE.output * 20)) / 1e6);
      assert.match(r.gateway.refused, /maxCostUSD \$1/);
      // The hard stop's start is logged once, with the episode and no secret (bench/gateway-hardstop times from it).
      const refusals = run.lines.filter((l) => l.msg === 'gateway: budget exhausted, requests refused');
      assert.deepEqual(
        refusals.map((l) => [l.task, l.episode]),
        [['loop', 1]],
      );
      assert.equal(r.outcome, 'cancelled');
      assert.equal(st.phase, 'NeedsReview', st.message);
      assert.equal(st.reason, 'BudgetExceeded');
      assert.equal(st.costUSD, r.gateway.costUSD);
    });
  });
}
