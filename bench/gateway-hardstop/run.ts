// bench/gateway-hardstop: the hard stop's figure (issue 29 §2). The real Claude CLI in a never-ending tool loop
// against the stand-in model server at $0.05 a request, `maxCostUSD: 1`, run by `episodic run`:
//   after:  behind the gateway: spend, and the time from the gateway's refusal to the episode's end;
//   before: the same loop straight to the model server: the cap acts only between episodes, so the loop runs
//           to the episode's timeout; spend, and the time from the request that reached $1 to the episode's end.
// Needs a built dist/ (`npm run -s build`) and the CLIs (scripts/agent-clis/install.ts).
//   node bench/gateway-hardstop/run.ts [--runs 3] [--before-runs 1] [--before-timeout 60]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { agentRun, baseEnv } from '../../test/real-agents/agents.ts';
import { ensureClis, episodic, scratchDir } from '../../test/real-agents/support.ts';
import type { EpisodicRun } from '../../test/real-agents/support.ts';
import { startModelServer } from '../../test/model-server/server.ts';
import { TOOL_LOOP_USAGE } from '../../test/model-server/scenarios.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    'before-runs': { type: 'string', default: '1' },
    'before-timeout': { type: 'string', default: '60' },
  },
});
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0, cacheWritePerMTok: 0 };
/** $ per toolloop request at PRICE: 10k in × $3 + 1k out × $20 per MTok = $0.05. */
const PER_REQUEST = (TOOL_LOOP_USAGE.input * PRICE.inputPerMTok + TOOL_LOOP_USAGE.output * PRICE.outputPerMTok) / 1e6;
const CAP = 1;
const REAL_KEY = 'sk-ant-bench-hardstop-key-0000';
const REFUSED = 'gateway: budget exhausted, requests refused';

interface Figure {
  mode: 'after' | 'before';
  requests: number;
  spentUSD: number;
  /** What the agent itself reported spending. */
  agentUSD: number;
  /** From the refusal (after) or the request that reached the cap (before) to the episode's end, ms. */
  stopMs: number;
  episodeS: number;
  outcome: string;
}

const server = await startModelServer();
await ensureClis();

function specs(dir: string, scenario: string, mode: Figure['mode']): void {
  const run = agentRun('claude', 'stream-json', {
    serverUrl: server.url,
    scenarioName: scenario,
    home: path.join(dir, 'home'),
  });
  // after: the gateway sets the base URL and the key (its token); before: the agent talks to the server itself.
  const env = Object.entries(run.env)
    .filter(([k]) => mode === 'before' || !['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY'].includes(k))
    .map(([name, value]) => ({ name, value }));
  const creds = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentCredentials',
    metadata: { name: 'loop-creds' },
    spec: {
      provider: 'anthropic',
      upstream: `${server.url}/s/${scenario}`,
      credentials: [{ name: 'main', env: 'BENCH_ANTHROPIC_KEY' }],
      pricing: { '*': PRICE },
    },
  };
  const timeout = mode === 'before' ? Number(values['before-timeout']) : 300;
  const task = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name: 'loop' },
    spec: {
      prompt: 'Do the next step.',
      agent: {
        command: run.command,
        promptVia: run.promptVia,
        output: run.output,
        env,
        ...(mode === 'after' ? { credentials: 'loop-creds' } : {}),
      },
      workspace: 'ws/loop',
      completion: { promise: 'DONE' },
      limits: { maxEpisodes: 1, episodeTimeoutSeconds: timeout, maxCostUSD: CAP },
    },
  };
  const docs = mode === 'after' ? [creds, task] : [task];
  writeFileSync(path.join(dir, 'tasks.yaml'), docs.map((d) => JSON.stringify(d)).join('\n---\n'));
}

interface EpisodeRecord {
  startedAt: string;
  finishedAt: string;
  outcome: string;
  /** The agent's own report (Claude prices the tokens itself). */
  costUSD?: number;
  gateway?: { costUSD: number };
}

function record(dir: string): EpisodeRecord {
  const file = path.join(dir, '.episodic', 'logs', 'default', 'loop', 'episodes.jsonl');
  return JSON.parse(readFileSync(file, 'utf8').trim().split('\n')[0] as string);
}

async function once(mode: Figure['mode'], i: number): Promise<Figure> {
  const scratch = scratchDir(`hardstop-${mode}`);
  const dir = path.join(scratch.dir, 'specs');
  mkdirSync(dir, { recursive: true });
  const scenario = `toolloop.hardstop-${mode}-${i}`;
  specs(dir, scenario, mode);
  const env = baseEnv({ HOME: path.join(scratch.dir, 'home'), TZ: 'UTC', BENCH_ANTHROPIC_KEY: REAL_KEY });
  const run: EpisodicRun = await episodic(['run', dir], env);
  try {
    if (run.hangGuard) throw new Error(run.hangGuard);
    const r = record(dir);
    const seen = server.requestsFor(scenario).filter((q) => q.path === '/v1/messages');
    const end = Date.parse(r.finishedAt);
    let from: number;
    if (mode === 'after') {
      const refused = run.lines.find((l) => l.msg === REFUSED);
      if (!refused) throw new Error(`no refusal logged; stderr: ${run.stderr.slice(-2000)}`);
      // pino's time: an ISO string in episodic's JSON logs (a number in pino's default).
      from = typeof refused.time === 'number' ? refused.time : Date.parse(String(refused.time));
    } else {
      // The request whose answer took the spend to the cap: the controller hears of it only at the end.
      const capAt = seen[Math.ceil(CAP / PER_REQUEST - 1e-9) - 1];
      if (!capAt) throw new Error(`the loop never reached $${CAP}: ${seen.length} requests`);
      from = capAt.at;
    }
    return {
      mode,
      requests: seen.length,
      spentUSD: mode === 'after' ? (r.gateway?.costUSD ?? Number.NaN) : seen.length * PER_REQUEST,
      agentUSD: r.costUSD ?? Number.NaN,
      stopMs: end - from,
      episodeS: (end - Date.parse(r.startedAt)) / 1000,
      outcome: r.outcome,
    };
  } finally {
    scratch.remove();
  }
}

const figures: Figure[] = [];
const load = [loadavg()[0]];
for (let i = 0; i < Number(values.runs); i++) figures.push(await once('after', i));
for (let i = 0; i < Number(values['before-runs']); i++) figures.push(await once('before', i));
load.push(loadavg()[0]);
await server.close();

const fmt = (n: number, d = 2) => n.toFixed(d);
console.log(`# $${PER_REQUEST} a request, maxCostUSD ${CAP}; load average ${load.map((l) => fmt(l)).join(' → ')}`);
console.log('| run    | requests | spent $ | agent says $ | stop ms (refusal or $1 → end) | episode s | outcome |');
console.log('| ------ | -------- | ------- | ------------ | ----------------------------- | --------- | ------- |');
for (const f of figures)
  console.log(
    `| ${f.mode.padEnd(6)} | ${f.requests} | ${fmt(f.spentUSD)} | ${fmt(f.agentUSD)} | ${f.stopMs} | ${fmt(f.episodeS, 1)} | ${f.outcome} |`,
  );
const after = figures.filter((f) => f.mode === 'after');
const before = figures.filter((f) => f.mode === 'before');
const worst = (xs: Figure[], k: 'spentUSD' | 'stopMs') => Math.max(...xs.map((f) => f[k]));
console.log(
  `after: spend ≤ $${fmt(worst(after, 'spentUSD'))} (goal ≤ $1.05), refusal → end ≤ ${worst(after, 'stopMs')} ms (goal ≤ 1000)`,
);
if (before.length > 0)
  console.log(
    `before/after spend: ${fmt(worst(before, 'spentUSD') / worst(after, 'spentUSD'))}x; $1 → end before ${worst(before, 'stopMs')} ms`,
  );
