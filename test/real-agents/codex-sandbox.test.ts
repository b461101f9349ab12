// Real Codex, sandboxed (bubblewrap, network gateway) behind the model gateway under `episodic run`: its
// CODEX_HOME is the task's gateway home, mounted into the sandbox, and the config.toml there names the sandbox's
// relay (not the host's gateway address, which the sandbox cannot reach); the relay carries it to the gateway,
// the gateway the real key to the model server.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { readStatus, runCli, specDir, tempDir } from '../support/local.ts';
import { agentRun } from './agents.ts';
import { PRICE } from './gateway-suite.ts';
import { ensureClis, skipRealAgents } from './support.ts';

let server: ModelServer;
before(async () => {
  if (!skipRealAgents) await ensureClis();
  server = await startModelServer();
});
after(() => server?.close());

it('real codex, sandboxed behind the model gateway: its config names the relay, the server sees the real key', {
  skip: skipRealAgents,
}, async () => {
  const scenario = 'ok.codex-sandbox-gw';
  const realKey = 'sk-proj-real-sandbox-gw-key-DO-NOT-LEAK-5d1e';
  const dir = tempDir('episodic-real-codex-sandbox-');
  // The user's own codex config (a model, no retries): kept in the episode's, its provider replaced.
  const run = agentRun('codex', 'json', {
    serverUrl: 'http://127.0.0.1:1',
    scenarioName: 'unused',
    home: path.join(dir, 'h'),
  });
  const env = Object.entries(run.env)
    .filter(([name]) => name !== 'OPENAI_API_KEY')
    .map(([name, value]) => ({ name, value }));
  const spec = {
    prompt: 'Do the next step of the plan.',
    agent: { command: run.command, promptVia: run.promptVia, output: run.output, env, credentials: 'creds' },
    completion: { promise: 'DONE' },
    limits: { maxEpisodes: 1, maxConsecutiveFailures: 1, episodeTimeoutSeconds: 120 },
    sandbox: { network: 'gateway', resources: { memoryMiB: 2048, pids: 512 } },
  };
  specDir([{ name: 'boxed', spec }], { dir });
  const creds = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentCredentials',
    metadata: { name: 'creds' },
    spec: {
      provider: 'openai',
      upstream: `${server.url}/s/${scenario}`,
      credentials: [{ name: 'main', env: 'TEST_CODEX_SANDBOX_KEY' }],
      pricing: { '*': PRICE },
    },
  };
  writeFileSync(path.join(dir, 'creds.yaml'), JSON.stringify(creds));
  const res = await runCli(['run', dir], { timeoutMs: 180_000, env: { TEST_CODEX_SANDBOX_KEY: realKey } });
  const log = res.stdout + res.stderr;
  const logs = path.join(dir, '.episodic', 'logs', 'default', 'boxed');
  const episodeLog = readFileSync(path.join(logs, 'episode-1.log'), 'utf8');
  const status = readStatus(dir, 'boxed')?.status;
  assert.equal(status?.phase, 'Succeeded', `${log}\n${episodeLog}`);
  const config = readFileSync(
    path.join(dir, '.episodic', 'gateway', 'codex', 'default', 'boxed', 'config.toml'),
    'utf8',
  );
  assert.match(config, /^base_url = "http:\/\/127\.0\.0\.1:41000\/t\/default\/boxed\/v1"$/m, 'the relay, not the host');
  assert.match(config, /^model = "gpt-5"$/m, "the user's config kept");
  const requests = server.requestsFor(scenario);
  assert.ok(
    requests.some((r) => r.path === '/v1/responses'),
    'codex reached the model server through the gateway',
  );
  for (const r of requests) assert.equal(r.credential, realKey, `${r.method} ${r.path}`);
  const record = JSON.parse(readFileSync(path.join(logs, 'episodes.jsonl'), 'utf8').split('\n')[0]);
  assert.deepEqual(record.sandbox, { network: 'gateway', resources: 'cgroup-v1' });
  assert.equal(record.gateway.requests, requests.length, 'the gateway metered every request');
  for (const text of [log, episodeLog, config, JSON.stringify(status), JSON.stringify(record)])
    assert.ok(!text.includes(realKey), 'the real key leaked');
});
