// Issue 30 §4: the real Claude Code CLI, sandboxed (bubblewrap, network gateway), runs a task end to end under
// `episodic run`: it reaches the stand-in model server only through the relay (its base URL rewritten to the
// sandbox's loopback), its $HOME is the task's own under the state directory, and the task succeeds. Then the same
// behind the model gateway (spec.agent.credentials): the relay carries the gateway's URL, the gateway the real key.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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

it('real claude, sandboxed: through the gateway relay to the model server, the task succeeds', {
  skip: skipRealAgents,
}, async () => {
  const scenario = 'ok.claude-sandbox';
  const dir = tempDir('episodic-real-sandbox-');
  const run = agentRun('claude', 'json', {
    serverUrl: server.url,
    scenarioName: scenario,
    home: path.join(dir, 'scratch-home'),
  });
  const env = Object.entries(run.env).map(([name, value]) => ({ name, value }));
  const spec = {
    prompt: 'Do the next step of the plan.',
    agent: { command: run.command, promptVia: run.promptVia, output: run.output, env },
    completion: { promise: 'DONE' },
    limits: { maxEpisodes: 1, maxConsecutiveFailures: 1, episodeTimeoutSeconds: 120 },
    sandbox: { network: 'gateway', resources: { memoryMiB: 2048, pids: 512 } },
  };
  specDir([{ name: 'sandboxed', spec }], { dir });
  const res = await runCli(['run', dir], { timeoutMs: 180_000 });
  const log = res.stdout + res.stderr;
  const episodeLog = readFileSync(path.join(dir, '.episodic', 'logs', 'default', 'sandboxed', 'episode-1.log'), 'utf8');
  assert.equal(readStatus(dir, 'sandboxed')?.status.phase, 'Succeeded', `${log}\n${episodeLog}`);
  assert.ok(server.requestsFor(scenario).length > 0, 'the CLI reached the model server');
  const record = JSON.parse(
    readFileSync(path.join(dir, '.episodic', 'logs', 'default', 'sandboxed', 'episodes.jsonl'), 'utf8').split('\n')[0],
  );
  assert.deepEqual(record.sandbox, { network: 'gateway', resources: 'cgroup-v1' });
  // The CLI wrote its settings into the task's own home, not the scratch home its env named.
  const home = path.join(dir, '.episodic', 'sandbox', 'default', 'sandboxed', 'home');
  assert.ok(readdirSync(home).length > 0, 'the sandbox home was used');
  assert.ok(!existsSync(path.join(dir, 'scratch-home', '.claude.json')), 'the host path in HOME was not');
});

it('real claude, sandboxed behind the model gateway: the relay reaches the gateway, the server sees the real key', {
  skip: skipRealAgents,
}, async () => {
  const scenario = 'ok.claude-sandbox-gw';
  const realKey = 'sk-ant-real-sandbox-gw-key-DO-NOT-LEAK-91c2';
  const dir = tempDir('episodic-real-sandbox-gw-');
  const run = agentRun('claude', 'json', {
    serverUrl: 'http://127.0.0.1:1',
    scenarioName: 'unused',
    home: path.join(dir, 'h'),
  });
  // The gateway sets the key and URL variables itself.
  const env = Object.entries(run.env)
    .filter(([name]) => name !== 'ANTHROPIC_BASE_URL' && name !== 'ANTHROPIC_API_KEY')
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
      provider: 'anthropic',
      upstream: `${server.url}/s/${scenario}`,
      credentials: [{ name: 'main', env: 'TEST_SANDBOX_GW_KEY' }],
      pricing: { '*': PRICE },
    },
  };
  writeFileSync(path.join(dir, 'creds.yaml'), JSON.stringify(creds));
  const res = await runCli(['run', dir], { timeoutMs: 180_000, env: { TEST_SANDBOX_GW_KEY: realKey } });
  const log = res.stdout + res.stderr;
  const logs = path.join(dir, '.episodic', 'logs', 'default', 'boxed');
  const episodeLog = readFileSync(path.join(logs, 'episode-1.log'), 'utf8');
  const status = readStatus(dir, 'boxed')?.status;
  assert.equal(status?.phase, 'Succeeded', `${log}\n${episodeLog}`);
  const requests = server.requestsFor(scenario);
  assert.ok(requests.length > 0, 'the CLI reached the model server through the gateway');
  for (const r of requests) assert.equal(r.credential, realKey, `${r.method} ${r.path}`);
  const record = JSON.parse(readFileSync(path.join(logs, 'episodes.jsonl'), 'utf8').split('\n')[0]);
  assert.deepEqual(record.sandbox, { network: 'gateway', resources: 'cgroup-v1' });
  assert.equal(record.gateway.requests, requests.length, 'the gateway metered every request');
  for (const text of [log, episodeLog, JSON.stringify(status), JSON.stringify(record)])
    assert.ok(!text.includes(realKey), 'the real key leaked');
});
