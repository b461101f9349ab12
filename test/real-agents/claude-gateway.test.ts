// The real Claude CLI behind the model gateway, in `episodic run`: the model server sees the real key, the
// agent's environment holds only its token, the tokens metered are what the server sent, and a never-ending
// tool loop at $0.05 a request stops at maxCostUSD 1 (spend ≤ $1.05), recorded as BudgetExceeded.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { TOOL_LOOP_USAGE, USAGE } from '../model-server/scenarios.ts';
import { agentRun, baseEnv } from './agents.ts';
import {
  assertEnded,
  ensureClis,
  episodic,
  HANG_GUARD_MS,
  scratchDir,
  skipRealAgents,
  type EpisodicRun,
} from './support.ts';

const REAL_KEY = 'sk-ant-real-gateway-key-DO-NOT-LEAK-5d1e';
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

function credentials(name: string, upstream: string): object {
  return {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentCredentials',
    metadata: { name },
    spec: {
      provider: 'anthropic',
      upstream,
      credentials: [{ name: 'main', env: 'TEST_ANTHROPIC_KEY' }],
      pricing: { '*': PRICE },
    },
  };
}

function task(name: string, creds: string, root: string, limits: object): object {
  const run = agentRun('claude', 'stream-json', {
    serverUrl: 'http://unused',
    scenarioName: 'unused',
    home: path.join(root, 'home', name),
  });
  // The gateway sets the base URL and the key: the spec names neither.
  const env = Object.entries(run.env)
    .filter(([k]) => !['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY'].includes(k))
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

describe('claude behind the model gateway (episodic run)', {
  skip: skipRealAgents,
  timeout: HANG_GUARD_MS + 60_000,
}, () => {
  let server: ModelServer;
  let scratch: ReturnType<typeof scratchDir>;
  let dir: string;
  let run: EpisodicRun;
  /** /proc/PID/environ of each agent, read while it ran. */
  const environs = new Map<string, string>();

  before(async () => {
    await ensureClis();
    server = await startModelServer();
    scratch = scratchDir('claude-gateway');
    dir = path.join(scratch.dir, 'specs');
    mkdirSync(dir, { recursive: true });
    const docs = [
      credentials('ok-creds', `${server.url}/s/ok.gw-claude`),
      credentials('loop-creds', `${server.url}/s/toolloop.gw-claude`),
      task('ok', 'ok-creds', scratch.dir, {}),
      task('loop', 'loop-creds', scratch.dir, { maxCostUSD: 1 }),
    ];
    writeFileSync(path.join(dir, 'tasks.yaml'), docs.map((d) => JSON.stringify(d)).join('\n---\n'));
    const env = baseEnv({
      HOME: path.join(scratch.dir, 'controller-home'),
      TZ: 'UTC',
      TEST_ANTHROPIC_KEY: REAL_KEY,
      // The controller's own key: the agent must not inherit it.
      ANTHROPIC_API_KEY: REAL_KEY,
    });
    run = await episodic(['run', dir, '--max-concurrent', '2'], env, {
      hangGuardMs: Number(process.env.GW_HANG_MS ?? HANG_GUARD_MS),
      interruptWhen: (lines) => {
        for (const l of lines) {
          const pid = l.agentPid;
          if (
            l.event === 'EpisodeStarted' &&
            typeof l.task === 'string' &&
            typeof pid === 'number' &&
            !environs.has(l.task)
          ) {
            try {
              environs.set(l.task, readFileSync(`/proc/${pid}/environ`, 'utf8'));
            } catch {
              // already gone (the ok task may end first): its environ is checked through the loop task
            }
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
    if (run.hangGuard) console.log(run.stderr.slice(-6000));
    assertEnded(run);
    const requests = server.requests.filter((r) => r.scenarioName.endsWith('.gw-claude'));
    assert.ok(requests.length >= 2, run.stderr.slice(-3000));
    for (const r of requests) assert.equal(r.credential, REAL_KEY, `${r.method} ${r.path}`);
    assert.deepEqual(
      requests.filter((r) => r.api === 'unknown'),
      [],
    );
  });

  it("the agent's environment holds its token and the gateway URL, not the key", () => {
    assertEnded(run);
    const environ = environs.get('loop');
    assert.ok(
      environ,
      `no environ read; lines: ${JSON.stringify(run.lines.filter((l) => l.event === 'EpisodeStarted'))}`,
    );
    const vars = new Map(
      environ
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    assert.ok(!environ.includes(REAL_KEY), 'the real key is in the agent environment');
    assert.equal(vars.has('TEST_ANTHROPIC_KEY'), false);
    assert.match(vars.get('ANTHROPIC_API_KEY') ?? '', /^episodic-gw-[A-Za-z0-9_-]{43}$/);
    assert.match(vars.get('ANTHROPIC_BASE_URL') ?? '', /^http:\/\/127\.0\.0\.1:\d+\/t\/default\/loop$/);
    assert.ok(!run.stdout.includes(REAL_KEY) && !run.stderr.includes(REAL_KEY), 'the key is in the controller log');
  });

  it('the tokens metered are what the server sent; status counts the metered figure', () => {
    assertEnded(run);
    const s = status('ok');
    assert.equal(s.phase, 'Succeeded', s.message);
    const r = record('ok');
    const n = server.requestsFor('ok.gw-claude').filter((q) => q.path === '/v1/messages').length;
    const u = USAGE.anthropic;
    assert.equal(r.gateway.requests, server.requestsFor('ok.gw-claude').length);
    assert.deepEqual(r.gateway.tokens, {
      input: u.input * n,
      output: u.output * n,
      cacheRead: u.cacheRead * n,
      cacheWrite: u.cacheWrite * n,
    });
    assert.equal(s.costUSD, r.gateway.costUSD);
    assert.ok(!JSON.stringify(s).includes(REAL_KEY) && !JSON.stringify(r).includes(REAL_KEY));
  });

  it('a never-ending tool loop stops at maxCostUSD 1: spend ≤ $1.05, recorded BudgetExceeded', () => {
    assertEnded(run);
    const s = status('loop');
    const r = record('loop');
    const forwarded = server.requestsFor('toolloop.gw-claude').length;
    console.log(
      `# tool loop: ${forwarded} requests forwarded, metered $${r.gateway.costUSD}, episode ${r.startedAt} → ${r.finishedAt}`,
    );
    assert.ok(forwarded >= 20, `${forwarded} requests`);
    assert.ok(r.gateway.costUSD >= 1 && r.gateway.costUSD <= 1.05, `spent ${r.gateway.costUSD}`);
    assert.equal(r.gateway.costUSD, (forwarded * (TOOL_LOOP_USAGE.input * 3 + TOOL_LOOP_USAGE.output * 20)) / 1e6);
    assert.match(r.gateway.refused, /maxCostUSD \$1/);
    assert.equal(r.outcome, 'cancelled');
    assert.equal(s.phase, 'NeedsReview', s.message);
    assert.equal(s.reason, 'BudgetExceeded');
    assert.equal(s.costUSD, r.gateway.costUSD);
  });
});
