// What an agent behind the gateway is given, per provider: its token as the API key and the base URL each CLI
// honours; and the provider key variables it must not inherit from the controller. Pure, so both modes (a
// local process, a pod) give the same.
import type { Provider } from './usage.ts';

/** Every variable a CLI of these providers reads a key or token from: never inherited behind the gateway. */
export const PROVIDER_KEY_VARS = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'OPENAI_API_KEY',
  'CODEX_API_KEY',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_GENAI_API_KEY',
] as const;

/**
 * The gateway's URL for the task, as the provider's CLI wants it (OpenAI's base URL includes /v1). Codex reads
 * neither variable for its URL: `codexHome` is the episode's CODEX_HOME, whose config.toml names the gateway.
 */
export function agentGatewayEnv(
  provider: Provider,
  taskBaseUrl: string,
  token: string,
  codexHome?: string,
): Record<string, string> {
  if (provider === 'anthropic') return { ANTHROPIC_BASE_URL: taskBaseUrl, ANTHROPIC_API_KEY: token };
  if (provider === 'openai')
    return {
      OPENAI_BASE_URL: `${taskBaseUrl}/v1`,
      OPENAI_API_KEY: token,
      CODEX_API_KEY: token,
      ...(codexHome ? { CODEX_HOME: codexHome } : {}),
    };
  return { GOOGLE_GEMINI_BASE_URL: taskBaseUrl, GEMINI_API_KEY: token };
}
