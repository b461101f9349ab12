// How each real CLI is run headless against the stand-in model server: argv per output format, the
// environment, and the scratch home each one needs (see ../shared/agent-outputs/real/README.md). The same
// settings the README recommends: the CLI's own retries off (episodic's backoff is the one that counts),
// telemetry and update checks off.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AGENT_CLIS, installedBin, type CliName } from '../../scripts/agent-clis/clis.ts';

export const FORMATS = {
  claude: ['text', 'json', 'stream-json'],
  codex: ['text', 'json'],
  gemini: ['text', 'json', 'stream-json'],
} as const satisfies Record<CliName, readonly string[]>;

export type AgentFormat<C extends CliName = CliName> = (typeof FORMATS)[C][number];

export const GEMINI_MODEL = 'gemini-2.5-pro';

export interface AgentRun {
  cli: CliName;
  format: string;
  /** spec.agent.command (for promptVia argument the prompt is appended by episodic). */
  command: string[];
  promptVia: 'stdin' | 'argument';
  output: CliName;
  /** spec.agent.env: what the CLI needs besides the controller's own environment. */
  env: Record<string, string>;
}

export function cliBin(cli: CliName): string | undefined {
  const spec = AGENT_CLIS.find((c) => c.name === cli);
  return spec ? installedBin(spec) : undefined;
}

/**
 * Set-up mistakes a user makes, reproduced on purpose: no key, an untrusted directory (codex without
 * --skip-git-repo-check, gemini without GEMINI_CLI_TRUST_WORKSPACE), gemini without an auth type, a
 * model server that is down (connection refused); and gemini's turn limit (model.maxSessionTurns 0).
 */
export const SETUP_VARIANTS = {
  claude: ['nokey', 'down'],
  codex: ['nokey', 'untrusted', 'down'],
  gemini: ['nokey', 'untrusted', 'noauthtype', 'down', 'maxturns'],
} as const satisfies Record<CliName, readonly string[]>;
export type SetupVariant = (typeof SETUP_VARIANTS)[CliName][number];

export interface RunTarget {
  serverUrl: string;
  scenarioName: string;
  /** The CLI's scratch home (created here). */
  home: string;
  variant?: SetupVariant;
}

/**
 * A CLI's headless run against `${serverUrl}/s/${scenarioName}`. A scenario name starting with `oauth-`
 * logs Claude Code in as a subscriber instead of with an API key.
 */
export function agentRun(cli: CliName, format: string, target: RunTarget): AgentRun {
  const bin = cliBin(cli);
  if (!bin) throw new Error(`${cli} is not installed; run: node scripts/agent-clis/install.ts`);
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  const server = target.variant === 'down' ? 'http://127.0.0.1:1' : target.serverUrl;
  const base = `${server}/s/${target.scenarioName}`;
  const run =
    cli === 'claude'
      ? claudeRun(bin, format, base, target.scenarioName, target.home)
      : cli === 'codex'
        ? codexRun(bin, format, base, target.home)
        : geminiRun(bin, format, base, target.home);
  return applyVariant(run, target);
}

function applyVariant(run: AgentRun, target: RunTarget): AgentRun {
  const env = { ...run.env };
  let command = run.command;
  if (target.variant === 'nokey') {
    delete env.ANTHROPIC_API_KEY;
    delete env.CLAUDE_CODE_OAUTH_TOKEN;
    delete env.OPENAI_API_KEY;
    delete env.GEMINI_API_KEY;
  } else if (target.variant === 'untrusted') {
    delete env.GEMINI_CLI_TRUST_WORKSPACE;
    command = command.filter((a) => a !== '--skip-git-repo-check');
  } else if (target.variant === 'noauthtype' || target.variant === 'maxturns') {
    const file = path.join(target.home, '.gemini', 'settings.json');
    const settings = JSON.parse(readFileSync(file, 'utf8'));
    if (target.variant === 'noauthtype') delete settings.security;
    else settings.model = { maxSessionTurns: 0 };
    writeFileSync(file, JSON.stringify(settings));
  }
  return { ...run, env, command };
}

function claudeRun(bin: string, format: string, base: string, scenarioName: string, home: string): AgentRun {
  mkdirSync(home, { recursive: true });
  const flags =
    format === 'text' ? [] : ['--output-format', format, ...(format === 'stream-json' ? ['--verbose'] : [])];
  const auth: Record<string, string> = scenarioName.startsWith('oauth-')
    ? { CLAUDE_CODE_OAUTH_TOKEN: 'dummy-oauth' }
    : { ANTHROPIC_API_KEY: 'dummy' };
  return {
    cli: 'claude',
    format,
    command: [bin, '-p', ...flags],
    promptVia: 'stdin',
    output: 'claude',
    env: {
      HOME: home,
      ANTHROPIC_BASE_URL: base,
      ...auth,
      CLAUDE_CODE_MAX_RETRIES: '0',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    },
  };
}

function codexRun(bin: string, format: string, base: string, home: string): AgentRun {
  const codexHome = path.join(home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  // A provider of our own: retries off, the Responses API, the key from OPENAI_API_KEY.
  writeFileSync(
    path.join(codexHome, 'config.toml'),
    [
      'model = "gpt-5"',
      'model_provider = "mock"',
      '[model_providers.mock]',
      'name = "mock"',
      `base_url = "${base}/v1"`,
      'env_key = "OPENAI_API_KEY"',
      'wire_api = "responses"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
  return {
    cli: 'codex',
    format,
    command: [bin, 'exec', ...(format === 'json' ? ['--json'] : []), '--skip-git-repo-check', '-'],
    promptVia: 'stdin',
    output: 'codex',
    env: { HOME: home, CODEX_HOME: codexHome, OPENAI_API_KEY: 'dummy' },
  };
}

function geminiRun(bin: string, format: string, base: string, home: string): AgentRun {
  const dir = path.join(home, '.gemini');
  mkdirSync(dir, { recursive: true });
  const settings = {
    // GOOGLE_GEMINI_BASE_URL alone selects auth type "gateway", which headless mode rejects (exit 41).
    security: { auth: { selectedType: 'gemini-api-key' } },
    // One attempt: gemini's own retries (10 attempts, 5-30 s apart) would hide outages from episodic.
    general: { maxAttempts: 1, enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
  };
  writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings, null, 2));
  const flags = format === 'text' ? [] : ['--output-format', format];
  return {
    cli: 'gemini',
    format,
    // -m: without it gemini first asks a router model, with 5 retries of its own.
    command: [bin, '-m', GEMINI_MODEL, ...flags, '--prompt'],
    promptVia: 'argument',
    output: 'gemini',
    env: {
      HOME: home,
      GOOGLE_GEMINI_BASE_URL: base,
      GEMINI_API_KEY: 'dummy',
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
      // Without it gemini starts a second Node only to raise its heap limit: ~35 % of each start's CPU.
      GEMINI_CLI_NO_RELAUNCH: 'true',
    },
  };
}

/** The environment a CLI runs with besides AgentRun.env: nothing of the test machine's keys or config. */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  const nodeDir = path.dirname(process.execPath);
  return {
    PATH: `${nodeDir}:/usr/local/bin:/usr/bin:/bin`,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    ...extra,
  };
}
