// Real Gemini CLI behind the model gateway (see gateway-suite.ts): GOOGLE_GEMINI_BASE_URL and its token as
// GEMINI_API_KEY; the gateway swaps x-goog-api-key for the real key and meters usageMetadata.
import { USAGE } from '../model-server/scenarios.ts';
import { defineGatewaySuite } from './gateway-suite.ts';

const u = USAGE.gemini;
defineGatewaySuite({
  cli: 'gemini',
  provider: 'gemini',
  format: 'json',
  realKey: 'AIzaSy-real-gateway-key-DO-NOT-LEAK-2c9e',
  keyVar: 'TEST_GEMINI_KEY',
  gatewaySets: ['GOOGLE_GEMINI_BASE_URL', 'GEMINI_API_KEY'],
  tokenVar: 'GEMINI_API_KEY',
  urlVar: 'GOOGLE_GEMINI_BASE_URL',
  okTokens: { input: u.prompt - u.cached, output: u.candidates + u.thoughts, cacheRead: u.cached, cacheWrite: 0 },
  isModelCall: (r) => /:(stream)?[gG]enerateContent$/.test(r.path),
});
