// Codex behind the gateway. `codex exec` 0.169 ignores OPENAI_BASE_URL, and its built-in OpenAI provider opens
// a Responses WebSocket; a provider of its own (`model_providers.X` with `wire_api = "responses"`) streams the
// same Responses events over plain HTTP SSE, which the gateway already forwards and meters. So each episode's
// CODEX_HOME gets a config.toml naming such a provider at the gateway, the key read from OPENAI_API_KEY (the
// token): the file holds a URL and a variable's name, never a key. We chose this over proxying the WebSocket
// because it needs no second protocol in the gateway and meters from the one parser (usage.ts).
// Pure: the user's own config in, the episode's config out.

/** The provider's id in the episode's config.toml. */
export const CODEX_PROVIDER_ID = 'episodic-gateway';
/** The variable codex reads the provider's key from: the agent's token (agent-env.ts sets it). */
export const CODEX_KEY_VAR = 'OPENAI_API_KEY';

/** A TOML table header line: `[a.b]` or `[[a]]`, with an optional comment. */
const TABLE = /^\s*\[/;
const OWN_TABLE = new RegExp(`^\\s*\\[\\s*model_providers\\s*\\.\\s*"?${CODEX_PROVIDER_ID}"?\\s*\\]`);
const TOP_PROVIDER = /^\s*model_provider\s*=/;

/**
 * The episode's config.toml: the user's config with its top-level `model_provider` and any table of ours
 * taken out, our provider chosen and defined. Line-based on purpose: the two things it removes are single
 * lines or whole tables, and everything else (model, profiles, MCP servers) is kept as the user wrote it.
 */
export function codexGatewayConfig(baseUrl: string, userToml = ''): string {
  const kept: string[] = [];
  let inTable = false;
  let inOwn = false;
  for (const line of userToml.split(/\r?\n/)) {
    if (TABLE.test(line)) {
      inTable = true;
      inOwn = OWN_TABLE.test(line);
    }
    if (inOwn) continue;
    if (!inTable && TOP_PROVIDER.test(line)) continue;
    kept.push(line);
  }
  const body = kept.join('\n').trim();
  return [
    '# Written by episodic for one task behind its model gateway; rewritten at every episode.',
    `model_provider = ${JSON.stringify(CODEX_PROVIDER_ID)}`,
    ...(body ? [body] : []),
    '',
    `[model_providers.${CODEX_PROVIDER_ID}]`,
    'name = "episodic gateway"',
    `base_url = ${JSON.stringify(baseUrl)}`,
    `env_key = ${JSON.stringify(CODEX_KEY_VAR)}`,
    'wire_api = "responses"',
    'supports_websockets = false',
    '',
  ].join('\n');
}
