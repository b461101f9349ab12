// The real Claude CLI behind the gateway with a pool of two credentials (issue 29 §3): the first answers 429
// on every request, so the gateway fails each request it is tried on over to the second within the same
// request. The CLI never sees the 429 (its own retries are off), the episode succeeds, the model server sees
// only the two real keys, and the agent's environment and argv hold neither. Without the failover the CLI
// reports the 429, its first episode fails, and a second one succeeds: the test asserts one episode.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { credentialsStatusPath } from '../../controller/util/state-layout.ts';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { agentRun, baseEnv } from './agents.ts';
import { PRICE } from './gateway-suite.ts';
import { assertEnded, ensureClis, episodic, HANG_GUARD_MS, scratchDir, skipRealAgents } from './support.ts';
import type { EpisodicRun } from './support.ts';

const KEY_A = 'sk-ant-api03-real-pool-A-DO-NOT-LEAK-7f31';
const KEY_B = 'sk-ant-api03-real-pool-B-DO-NOT-LEAK-9c02';
const TAG = 'gw-claude-pool';

describe('claude behind the gateway with a pool of two credentials, the first answering 429', {
  skip: skipRealAgents,
  timeout: HANG_GUARD_MS + 60_000,
}, () => {
  let server: ModelServer;
  let scratch: ReturnType<typeof scratchDir>;
  let dir: string;
  let run: EpisodicRun;
  let proc: { environ: string; cmdline: string } | undefined;

  before(async () => {
    await ensureClis();
    server = await startModelServer();
    server.keyScenarios.set(KEY_A, 'ratelimit');
    scratch = scratchDir(TAG);
    dir = path.join(scratch.dir, 'specs');
    mkdirSync(dir, { recursive: true });
    const cli = agentRun('claude', 'stream-json', {
      serverUrl: 'http://127.0.0.1:1',
      scenarioName: 'unused',
      home: path.join(scratch.dir, 'home'),
    });
    const env = Object.entries(cli.env)
      .filter(([k]) => k !== 'ANTHROPIC_BASE_URL' && k !== 'ANTHROPIC_API_KEY')
      .map(([name, value]) => ({ name, value }));
    const docs = [
      {
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentCredentials',
        metadata: { name: 'pool' },
        spec: {
          provider: 'anthropic',
          upstream: `${server.url}/s/ok.${TAG}`,
          credentials: [
            { name: 'key-a', env: 'POOL_KEY_A' },
            { name: 'key-b', env: 'POOL_KEY_B' },
          ],
          pricing: { '*': PRICE },
        },
      },
      {
        apiVersion: 'episodic.dev/v1alpha1',
        kind: 'AgentTask',
        metadata: { name: 'pooled' },
        spec: {
          prompt: 'Do the next step.',
          agent: { command: cli.command, promptVia: cli.promptVia, output: cli.output, env, credentials: 'pool' },
          workspace: 'ws/pooled',
          completion: { promise: 'DONE' },
          limits: { maxEpisodes: 1, episodeTimeoutSeconds: 120 },
        },
      },
    ];
    writeFileSync(path.join(dir, 'tasks.yaml'), docs.map((d) => JSON.stringify(d)).join('\n---\n'));
    const controllerEnv = baseEnv({
      HOME: path.join(scratch.dir, 'controller-home'),
      TZ: 'UTC',
      POOL_KEY_A: KEY_A,
      POOL_KEY_B: KEY_B,
    });
    run = await episodic(['run', dir], controllerEnv, {
      interruptWhen: (lines) => {
        for (const l of lines) {
          const pid = l.agentPid;
          if (proc || l.event !== 'EpisodeStarted' || typeof pid !== 'number') continue;
          try {
            proc = {
              environ: readFileSync(`/proc/${pid}/environ`, 'utf8'),
              cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8'),
            };
          } catch {
            // already gone: the environ assertion below says so
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

  const status = () =>
    JSON.parse(readFileSync(path.join(dir, '.episodic', 'status', 'default', 'pooled.json'), 'utf8')).status;
  const record = () =>
    JSON.parse(
      readFileSync(path.join(dir, '.episodic', 'logs', 'default', 'pooled', 'episodes.jsonl'), 'utf8')
        .trim()
        .split('\n')[0] as string,
    );

  it('the episode succeeds through the second credential; every request on the first was a 429', () => {
    assertEnded(run);
    const st = status();
    assert.equal(st.phase, 'Succeeded', `${st.message}\n${run.stderr.slice(-3000)}`);
    // In its first episode: the CLI never saw the 429 (had it, that episode would have failed and a retry run).
    assert.equal(st.episodes, 1, JSON.stringify(record()));
    assert.equal(record().outcome, 'succeeded', record().message);
    const requests = server.requestsFor(`ok.${TAG}`);
    console.log(
      `# claude pool: ${requests.map((r) => `${r.path} ${r.credential === KEY_A ? 'A' : 'B'} → ${r.status}`).join('; ')}`,
    );
    const onA = requests.filter((r) => r.credential === KEY_A);
    const onB = requests.filter((r) => r.credential === KEY_B);
    assert.ok(onA.length >= 1, 'the first credential was tried');
    assert.deepEqual([...new Set(onA.map((r) => r.status))], [429]);
    assert.ok(onB.length >= 1 && onB.every((r) => r.status !== 429), 'the second answered');
    // The agent was charged only what went out on the credential that answered.
    assert.equal(record().gateway.requests, onB.length);
  });

  it('the model server saw only the two real keys, never the token', () => {
    assertEnded(run);
    const requests = server.requests.filter((r) => r.scenarioName.endsWith(`.${TAG}`));
    assert.ok(requests.length >= 2);
    for (const r of requests) assert.ok(r.credential === KEY_A || r.credential === KEY_B, `${r.path}: ${r.credential}`);
  });

  it("the agent's environment, argv, the log, status and record hold neither key", () => {
    assertEnded(run);
    assert.ok(proc, 'the agent process was read as it started');
    for (const key of [KEY_A, KEY_B]) {
      assert.ok(!proc.environ.includes(key) && !proc.cmdline.includes(key), 'a key reached the agent');
      assert.ok(!run.stdout.includes(key) && !run.stderr.includes(key), 'a key is in the log');
      assert.ok(!JSON.stringify(status()).includes(key) && !JSON.stringify(record()).includes(key));
    }
    assert.match(proc.environ, /(^|\0)ANTHROPIC_API_KEY=episodic-gw-[A-Za-z0-9_-]{43}\0/);
    const pool = readFileSync(credentialsStatusPath(path.join(dir, '.episodic'), 'default', 'pool'), 'utf8');
    assert.ok(!pool.includes(KEY_A) && !pool.includes(KEY_B));
    assert.match(pool, /429/, "the first credential's last error is kept by name");
  });
});
