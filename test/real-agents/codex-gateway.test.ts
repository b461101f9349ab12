// Real Codex behind the model gateway (see gateway-suite.ts). Codex is given a provider of its own in the
// task's CODEX_HOME (controller/gateway/codex-config.ts), so it streams Responses over HTTP SSE, never a
// WebSocket; `codex exec` always streams, so there is no non-streaming case to run.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { USAGE } from '../model-server/scenarios.ts';
import { defineGatewaySuite } from './gateway-suite.ts';

const u = USAGE.openai;
defineGatewaySuite({
  cli: 'codex',
  provider: 'openai',
  format: 'json',
  realKey: 'sk-proj-real-gateway-key-DO-NOT-LEAK-7a3f',
  keyVar: 'TEST_OPENAI_KEY',
  gatewaySets: ['OPENAI_API_KEY'],
  tokenVar: 'OPENAI_API_KEY',
  okTokens: {
    input: u.input - u.cached - u.cacheWrite,
    output: u.output,
    cacheRead: u.cached,
    cacheWrite: u.cacheWrite,
  },
  isModelCall: (r) => r.path === '/v1/responses',
  extra: ({ dir, server, realKey }) => {
    // The requests went to /responses over HTTP: no upgrade was asked for.
    const requests = server.requests.filter((r) => r.scenarioName.endsWith('.gw-codex'));
    assert.ok(requests.every((r) => r.method === 'POST' && r.headers.upgrade === undefined));
    const config = readFileSync(
      path.join(dir, '.episodic', 'gateway', 'codex', 'default', 'loop', 'config.toml'),
      'utf8',
    );
    assert.ok(!config.includes(realKey), 'the real key is in the codex config');
    assert.match(config, /^model_provider = "episodic-gateway"$/m);
    assert.match(config, /^base_url = "http:\/\/127\.0\.0\.1:\d+\/t\/default\/loop\/v1"$/m);
    assert.match(config, /^env_key = "OPENAI_API_KEY"$/m);
  },
});
