// The codex config written behind the gateway: the user's config kept, its provider choice replaced by ours;
// its URL the one the agent reaches the gateway at (a sandbox's relay when sandboxed).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { validateCredentialsSpec } from '../../controller/api/agent-credentials.ts';
import { LocalGatewayBinding } from '../../controller/executors/local/gateway-binding.ts';
import { gatewayRoutes } from '../../controller/executors/sandbox/gateway-routes.ts';
import { CODEX_PROVIDER_ID, codexGatewayConfig } from '../../controller/gateway/codex-config.ts';
import { gatewayCodexHomePath } from '../../controller/util/state-layout.ts';

const URL = 'http://127.0.0.1:4567/t/default/x/v1';
const topLevel = (toml: string) => toml.slice(0, toml.search(/^\[/m)).split('\n');

describe('codexGatewayConfig', () => {
  const cases: Array<{ name: string; user: string; kept: string[]; gone: string[] }> = [
    { name: 'no user config', user: '', kept: [], gone: [] },
    {
      name: "the user's provider choice is replaced, their model and other tables kept",
      user: 'model = "gpt-5"\nmodel_provider = "mock"\n[model_providers.mock]\nbase_url = "http://direct"\n',
      kept: ['model = "gpt-5"', '[model_providers.mock]', 'base_url = "http://direct"'],
      gone: ['model_provider = "mock"'],
    },
    {
      name: 'a model_provider inside a profile is the profile’s, kept',
      user: '[profiles.fast]\nmodel_provider = "other"\n',
      kept: ['[profiles.fast]', 'model_provider = "other"'],
      gone: [],
    },
    {
      name: 'a table of our id in the user config is replaced, not duplicated',
      user: `[model_providers.${CODEX_PROVIDER_ID}]\nbase_url = "http://elsewhere"\n[tui]\nx = 1\n`,
      kept: ['[tui]', 'x = 1'],
      gone: ['base_url = "http://elsewhere"'],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const out = codexGatewayConfig(URL, c.user);
      for (const line of c.kept) assert.ok(out.split('\n').includes(line), `${line} kept`);
      for (const line of c.gone) assert.ok(!out.includes(line), `${line} gone`);
      assert.deepEqual(
        topLevel(out).filter((l) => l.startsWith('model_provider')),
        [`model_provider = "${CODEX_PROVIDER_ID}"`],
      );
      assert.equal(out.split('\n').filter((l) => l === `[model_providers.${CODEX_PROVIDER_ID}]`).length, 1);
      assert.ok(out.includes(`base_url = "${URL}"`));
      assert.ok(out.includes('env_key = "OPENAI_API_KEY"'));
      assert.ok(out.includes('wire_api = "responses"'));
    });
});

describe("the episode's codex config names the gateway as the agent reaches it", () => {
  const dir = mkdtempSync(join(tmpdir(), 'codex-config-'));
  const userHome = join(dir, 'user-codex');
  mkdirSync(userHome);
  writeFileSync(join(userHome, 'config.toml'), 'model = "gpt-5"\nmodel_provider = "mock"\n');
  const spec = validateCredentialsSpec({ provider: 'openai', credentials: [{ name: 'main', env: 'CODEX_CFG_KEY' }] });
  assert.ok(spec.ok);
  const doc = {
    key: 'default/oa',
    namespace: 'default',
    name: 'oa',
    file: 'c.yaml',
    spec: spec.spec,
    errors: [],
    specHash: 'h',
  };
  const binding = new LocalGatewayBinding({
    lookup: () => [doc],
    log: pino({ level: 'silent' }),
    stateDir: join(dir, 'state'),
    env: { CODEX_CFG_KEY: 'sk-proj-codex-config-NEVER-SHOWN' },
  });
  after(() => binding.close());
  const config = () =>
    readFileSync(join(gatewayCodexHomePath(join(dir, 'state'), 'default', 'x'), 'config.toml'), 'utf8');

  for (const sandboxed of [false, true])
    it(
      sandboxed ? 'sandboxed: the relay on the sandbox loopback' : 'not sandboxed: the gateway on the host',
      async () => {
        const grant = await binding.open({
          namespace: 'default',
          task: 'x',
          episode: 1,
          credentials: 'oa',
          leash: { task: { costUSD: 0, tokens: 0 }, others: [] },
          onRefused: () => {},
          agentEnv: { CODEX_HOME: userHome },
        });
        assert.ok(grant.ok);
        assert.match(grant.env.OPENAI_BASE_URL, /^http:\/\/127\.0\.0\.1:\d+\/t\/default\/x\/v1$/);
        const seen = sandboxed
          ? gatewayRoutes({ ...grant.env, OTHER_BASE_URL: 'http://10.0.0.1:9' }, []).env
          : grant.env;
        grant.writeAgentFiles(seen);
        const want = sandboxed ? 'http://127.0.0.1:41000/t/default/x/v1' : grant.env.OPENAI_BASE_URL;
        assert.equal(seen.OPENAI_BASE_URL, want);
        const lines = config().split('\n');
        assert.ok(lines.includes(`base_url = "${want}"`), config());
        assert.ok(lines.includes('model = "gpt-5"'), "the user's config kept");
        assert.ok(!config().includes('NEVER-SHOWN'), 'the key is in the config');
        grant.close();
      },
    );
});
