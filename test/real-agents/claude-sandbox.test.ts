// Issue 30 §4: the real Claude Code CLI, sandboxed (bubblewrap, network gateway), runs a task end to end under
// `episodic run`: it reaches the stand-in model server only through the relay (its base URL rewritten to the
// sandbox's loopback), its $HOME is the task's own under the state directory, and the task succeeds.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { startModelServer, type ModelServer } from '../model-server/server.ts';
import { readStatus, runCli, specDir, tempDir } from '../support/local.ts';
import { agentRun } from './agents.ts';
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
