// The real Claude CLI behind the model gateway (see gateway-suite.ts): ANTHROPIC_BASE_URL and its token as
// ANTHROPIC_API_KEY; the gateway swaps x-api-key for the real key and meters message_start/message_delta.
import { USAGE } from '../model-server/scenarios.ts';
import { defineGatewaySuite } from './gateway-suite.ts';

const u = USAGE.anthropic;
defineGatewaySuite({
  cli: 'claude',
  provider: 'anthropic',
  format: 'stream-json',
  realKey: 'sk-ant-real-gateway-key-DO-NOT-LEAK-5d1e',
  keyVar: 'TEST_ANTHROPIC_KEY',
  gatewaySets: ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY'],
  tokenVar: 'ANTHROPIC_API_KEY',
  urlVar: 'ANTHROPIC_BASE_URL',
  okTokens: { input: u.input, output: u.output, cacheRead: u.cacheRead, cacheWrite: u.cacheWrite },
  isModelCall: (r) => r.path === '/v1/messages',
});
