// The namespace default AgentCredentials in `episodic run DIR` (issue 29 §1): a task without
// spec.agent.credentials goes through the gateway of the one AgentCredentials marked spec.default (its agent
// gets a token, never the key; the gateway meters it; status and `get NAME` say the default chose it), a task
// with `credentials: none` runs without the gateway, and two defaults stop validate and run, naming both files.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startModelServer } from '../model-server/server.ts';
import { NODE, REPO, readStatus, runCli, specDir, tempDir, taskYaml } from '../support/local.ts';

const REAL_KEY = 'sk-ant-api03-namespace-default-never-in-the-agent';
const OWN_KEY = 'sk-ant-own-key-of-the-opted-out-task';
const AGENT = join(REPO, 'test/agents/messages-agent.mjs');
const OPS_AGENT = join(REPO, 'test/agents/ops-agent.mjs');
const PRICE = { inputPerMTok: 3, outputPerMTok: 20, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 };

function credentials(dir: string, file: string, name: string, upstream: string): void {
  const spec = {
    provider: 'anthropic',
    upstream,
    default: true,
    credentials: [{ name: 'main', env: 'DEFAULT_CREDS_KEY' }],
    pricing: { '*': PRICE },
  };
  const doc = { apiVersion: 'episodic.dev/v1alpha1', kind: 'AgentCredentials', metadata: { name }, spec };
  writeFileSync(join(dir, file), JSON.stringify(doc));
}

/** A task whose agent writes its environment to env.json in its workspace, then makes one Messages request. */
function task(dir: string, name: string, agent: Record<string, unknown> = {}): void {
  mkdirSync(join(dir, 'ws', name), { recursive: true });
  const env = [{ name: 'MESSAGES_AGENT_ENV_FILE', value: 'env.json' }, ...((agent.env as object[]) ?? [])];
  const spec = {
    agent: { command: [NODE, AGENT], output: 'text', ...agent, env },
    limits: { maxEpisodes: 1, episodeTimeoutSeconds: 60 },
  };
  writeFileSync(join(dir, `${name}.yaml`), taskYaml({ name, spec }));
}

const agentEnv = (dir: string, name: string): Record<string, string> =>
  JSON.parse(readFileSync(join(dir, 'ws', name, 'env.json'), 'utf8'));
const records = (dir: string, name: string) =>
  readFileSync(join(dir, '.episodic', 'logs', 'default', name, 'episodes.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

describe('local: the namespace default AgentCredentials', () => {
  it('a task without credentials goes through the default (a token, never the key, metered); "none" opts out', async () => {
    const server = await startModelServer();
    try {
      const dir = tempDir('creds-default-');
      credentials(dir, 'creds.yaml', 'team', `${server.url}/s/ok.default`);
      task(dir, 'uses-default');
      const direct = [
        { name: 'ANTHROPIC_BASE_URL', value: `${server.url}/s/ok.direct` },
        { name: 'ANTHROPIC_API_KEY', value: OWN_KEY },
      ];
      task(dir, 'opts-out', { credentials: 'none', env: direct });
      const res = await runCli(['run', dir], { env: { DEFAULT_CREDS_KEY: REAL_KEY } });
      const out = res.stdout + res.stderr;
      assert.equal(res.code, 0, out.slice(-3000));

      // Through the gateway: the model server saw the real key, the agent held only its token and the URL.
      const viaDefault = server.requestsFor('ok.default');
      assert.equal(viaDefault.length, 1, out.slice(-3000));
      assert.equal(viaDefault[0].credential, REAL_KEY);
      const env = agentEnv(dir, 'uses-default');
      assert.ok(env.ANTHROPIC_API_KEY && env.ANTHROPIC_API_KEY !== REAL_KEY, 'the agent got a token');
      assert.match(env.ANTHROPIC_BASE_URL ?? '', /^http:\/\/127\.0\.0\.1:\d+/);
      assert.ok(!JSON.stringify(env).includes(REAL_KEY), 'the real key is nowhere in the agent environment');
      assert.ok(!out.includes(REAL_KEY) && !out.includes(env.ANTHROPIC_API_KEY), 'nor in the output');
      const [record] = records(dir, 'uses-default');
      assert.equal(record.gateway?.requests, 1, JSON.stringify(record));
      assert.ok(record.gateway.tokens.input + record.gateway.tokens.output > 0, 'the gateway metered the tokens');
      const status = readStatus(dir, 'uses-default')?.status;
      assert.equal(status?.phase, 'Succeeded', status?.message);
      assert.deepEqual(status?.credentials, { name: 'team', namespaceDefault: true });
      const get = await runCli(['get', 'uses-default', dir]);
      assert.match(get.stdout, /Credentials: AgentCredentials team, the namespace default/, get.stdout + get.stderr);

      // Opted out: straight to its own upstream with its own key, no gateway figure, no credentials in status.
      const direct1 = server.requestsFor('ok.direct');
      assert.equal(direct1.length, 1);
      assert.equal(direct1[0].credential, OWN_KEY);
      assert.equal(agentEnv(dir, 'opts-out').ANTHROPIC_BASE_URL, `${server.url}/s/ok.direct`);
      const optedOut = readStatus(dir, 'opts-out')?.status;
      assert.equal(optedOut?.phase, 'Succeeded', optedOut?.message);
      assert.equal(optedOut?.credentials, undefined);
      assert.equal(records(dir, 'opts-out')[0].gateway, undefined);
      const getNone = await runCli(['get', 'opts-out', dir]);
      assert.doesNotMatch(getNone.stdout, /Credentials:/);
    } finally {
      await server.close();
    }
  });

  it('a child spawned by a task on the default resolves the default itself: its status says namespaceDefault', async () => {
    const dir = tempDir('creds-default-spawn-');
    credentials(dir, 'creds.yaml', 'team', 'http://127.0.0.1:1');
    const spawn = `@op ${JSON.stringify({ op: 'spawn', name: 'kid', prompt: 'child work' })}`;
    const agent = { command: [NODE, OPS_AGENT], output: 'claude', env: [{ name: 'OPS_AGENT_CLAUDE', value: '1' }] };
    specDir([{ name: 'parent', spec: { prompt: `spawn one\n${spawn}`, agent, limits: { maxEpisodes: 1 } } }], { dir });
    const res = await runCli(['run', dir], { env: { DEFAULT_CREDS_KEY: REAL_KEY } });
    const out = res.stdout + res.stderr;
    const parent = readStatus(dir, 'parent')?.status;
    assert.deepEqual(parent?.credentials, { name: 'team', namespaceDefault: true }, out.slice(-3000));
    const kid = readStatus(dir, 'parent-kid')?.status;
    assert.ok((kid?.episodes ?? 0) >= 1, `the child ran: ${out.slice(-3000)}`);
    assert.deepEqual(kid?.credentials, { name: 'team', namespaceDefault: true }, JSON.stringify(kid));
  });

  it('two defaults in one namespace: validate and run refuse, naming both files; no episode starts', async () => {
    const server = await startModelServer();
    try {
      const dir = tempDir('creds-two-defaults-');
      credentials(dir, 'first.yaml', 'first', `${server.url}/s/ok.two`);
      credentials(dir, 'second.yaml', 'second', `${server.url}/s/ok.two`);
      task(dir, 'relies');
      const validate = await runCli(['validate', dir]);
      assert.equal(validate.code, 2, validate.stdout + validate.stderr);
      const both =
        /2 AgentCredentials are the namespace default \(spec\.default: true\): .*first\.yaml.* and .*second\.yaml/;
      assert.match(validate.stderr, both);
      const run = await runCli(['run', dir], { env: { DEFAULT_CREDS_KEY: REAL_KEY } });
      assert.match(run.stdout + run.stderr, both);
      assert.equal(server.requestsFor('ok.two').length, 0, 'nothing reached the model');
      const status = readStatus(dir, 'relies')?.status;
      assert.equal(status?.episodes ?? 0, 0, JSON.stringify(status));
      // The task that relies on the default fails with the same words; it never goes keyless or picks one.
      assert.equal(status?.phase, 'Failed', JSON.stringify(status));
      assert.match(status?.message ?? '', both);
    } finally {
      await server.close();
    }
  });
});
