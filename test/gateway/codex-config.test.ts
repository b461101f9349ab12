// The codex config written behind the gateway: the user's config kept, its provider choice replaced by ours.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CODEX_PROVIDER_ID, codexGatewayConfig } from '../../controller/gateway/codex-config.ts';

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
